-- The coordinator: users partitioned by home node (bloom_shard(email, 3)) into a local partition
-- and two foreign tables on the data nodes, the filters, the merge of the nodes' deltas, and the
-- signup pre-check. psql variables: node1_port, node2_port, rows, capacity, error_rate.
CREATE EXTENSION bloomfilter;
CREATE EXTENSION postgres_fdw;

-- extensions 'bloomfilter': the extension's functions and aggregates may be sent to the nodes, so
-- a node runs bloom_agg over its own rows and returns one filter. async_capable: the nodes' parts
-- of one Append run at the same time. use_remote_estimate: the node costs the remote query itself.
-- fetch_size: fewer round trips for the plans that do fetch rows.
CREATE SERVER node1 FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '127.0.0.1', port :'node1_port',
  dbname 'postgres', extensions 'bloomfilter', async_capable 'true', use_remote_estimate 'true',
  fetch_size '10000');
CREATE SERVER node2 FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '127.0.0.1', port :'node2_port',
  dbname 'postgres', extensions 'bloomfilter', async_capable 'true', use_remote_estimate 'true',
  fetch_size '10000');
-- The nodes' superuser has the name of the coordinator's (the OS user that ran initdb); no password
-- over loopback (trust).
CREATE USER MAPPING FOR CURRENT_USER SERVER node1;
CREATE USER MAPPING FOR CURRENT_USER SERVER node2;

-- Aggregates grouped by the partition key run per partition, and on a foreign partition the whole
-- aggregate is sent to its node.
ALTER DATABASE postgres SET enable_partitionwise_aggregate = on;
SET enable_partitionwise_aggregate = on;

CREATE TABLE users (email text NOT NULL, signed_up_at timestamptz NOT NULL DEFAULT now())
  PARTITION BY LIST (bloom_shard(email, 3));
CREATE TABLE users_node0 PARTITION OF users (PRIMARY KEY (email)) FOR VALUES IN (0);
CREATE FOREIGN TABLE users_node1 PARTITION OF users FOR VALUES IN (1) SERVER node1 OPTIONS (table_name 'users');
CREATE FOREIGN TABLE users_node2 PARTITION OF users FOR VALUES IN (2) SERVER node2 OPTIONS (table_name 'users');
INSERT INTO users_node0 (email)
SELECT e FROM generate_series(1, :rows) AS g, LATERAL (SELECT 'user' || g || '@mail.com') AS x(e)
WHERE bloom_shard(e, 3) = 0;
-- As on the nodes: the planner then knows the partition is one group of bloom_shard(email, 3).
CREATE STATISTICS users_node0_home ON (bloom_shard(email, 3)) FROM users_node0;
CREATE STATISTICS users_node0_shard ON (bloom_shard(email, 64)) FROM users_node0;
VACUUM ANALYZE users_node0;

-- The merged filter (id 1) and the same keys in 64 shards.
CREATE TABLE filters (id int PRIMARY KEY, f bloom NOT NULL);
CREATE TABLE filter_shards (shard int PRIMARY KEY, f bloom NOT NULL);

CREATE TABLE rolled_back (email text NOT NULL);

-- The local partition's delta, the same as on the nodes.
\set users_table users_node0
\ir delta.sql

-- Where each node's sealed deltas are, and the last batch of each already merged into filters.
CREATE FOREIGN TABLE filter_outbox_node1 (batch bigint NOT NULL, emails bigint NOT NULL, f bloom NOT NULL)
  SERVER node1 OPTIONS (table_name 'filter_outbox');
CREATE FOREIGN TABLE filter_outbox_node2 (batch bigint NOT NULL, emails bigint NOT NULL, f bloom NOT NULL)
  SERVER node2 OPTIONS (table_name 'filter_outbox');
CREATE TABLE filter_sources (
  node int PRIMARY KEY,
  outbox regclass NOT NULL,
  merged_batch bigint NOT NULL DEFAULT 0
);
INSERT INTO filter_sources (node, outbox)
VALUES (0, 'filter_outbox'), (1, 'filter_outbox_node1'), (2, 'filter_outbox_node2');

-- One merge round, run periodically on the coordinator (CALL, outside a transaction block).
-- For each node: union its batches above the watermark into filters and advance the watermark in
-- one local transaction, so a batch is merged exactly once; only after that commit delete the
-- merged batches on the node. A failure between the two leaves batches that the watermark skips
-- and the next round deletes. Nothing is deleted on a node before the coordinator has committed
-- what it read, so no commit order between two servers matters and no two-phase commit is needed.
CREATE PROCEDURE filter_merge_round(INOUT batches bigint DEFAULT 0, INOUT emails bigint DEFAULT 0)
LANGUAGE plpgsql AS $$
DECLARE
  source record;
  watermark bigint;
  delta bloom;
  last_batch bigint;
  source_batches bigint;
  source_emails bigint;
BEGIN
  batches := 0;
  emails := 0;
  FOR source IN SELECT node, outbox FROM filter_sources ORDER BY node LOOP
    -- Rounds take turns per node: a concurrent round waits here, then reads the new watermark.
    SELECT merged_batch INTO watermark FROM filter_sources WHERE node = source.node FOR UPDATE;
    -- Runs on the node: only the union of its new batches comes back.
    EXECUTE format('SELECT bloom_union_agg(f), max(batch), count(*), sum(emails) FROM %s WHERE batch > $1',
                   source.outbox)
      INTO delta, last_batch, source_batches, source_emails USING watermark;
    IF source_batches > 0 THEN
      UPDATE filters SET f = f | delta WHERE id = 1;
      IF NOT FOUND THEN
        RAISE EXCEPTION 'filters has no row 1 to merge into';
      END IF;
      UPDATE filter_sources SET merged_batch = last_batch WHERE node = source.node;
      batches := batches + source_batches;
      emails := emails + source_emails;
    END IF;
    COMMIT;
    SELECT merged_batch INTO watermark FROM filter_sources WHERE node = source.node FOR UPDATE;
    EXECUTE format('DELETE FROM %s WHERE batch <= $1', source.outbox) USING watermark;
    COMMIT;
  END LOOP;
END $$;

-- The signup pre-check: most new emails are certainly not taken, which the filter says without
-- asking any node; only a "probably" asks the email's home partition (the key expression prunes
-- the other two).
CREATE FUNCTION email_taken(candidate text) RETURNS boolean LANGUAGE plpgsql STABLE AS $$
BEGIN
  IF NOT (SELECT bloom_contains(f, candidate) FROM filters WHERE id = 1) THEN
    RETURN false;
  END IF;
  RETURN EXISTS (SELECT 1 FROM users
                 WHERE email = candidate AND bloom_shard(email, 3) = bloom_shard(candidate, 3));
END $$;

-- The row goes to the email's home partition, whose primary key has the last word: a filter that
-- has not merged a recent signup yet lets the duplicate through to that key, which rejects it.
CREATE PROCEDURE sign_up(new_email text) LANGUAGE plpgsql AS $$
BEGIN
  IF email_taken(new_email) THEN
    RAISE EXCEPTION 'email % is already registered', new_email USING ERRCODE = 'unique_violation';
  END IF;
  INSERT INTO users (email) VALUES (new_email);
END $$;
