-- Tables partitioned by the indexed column: a check reads only the index of the partition the
-- value routes to, level by level while a level's partition key is that column, and every
-- partition's index under a level partitioned by something else. The locks a check takes show
-- which partitions' indexes it read.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS bloomfilter;
RESET client_min_messages;
CREATE SCHEMA regress_routing;
SET search_path = regress_routing, public;
-- The answer, then the partitions' indexes the check read (locked until the transaction ends).
CREATE FUNCTION checked(index regclass, value anyelement) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  found bool := bloom_index_contains(index, value);
BEGIN
  RETURN found || ' ' || array_to_string(ARRAY(
    SELECT c.relname::text FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
    WHERE l.pid = pg_backend_pid() AND l.locktype = 'relation' AND c.relkind = 'i'
      AND c.relnamespace = 'regress_routing'::regnamespace ORDER BY 1), ',');
END $$;

-- Hash partitions on the indexed column.
CREATE TABLE by_hash (email text NOT NULL) PARTITION BY HASH (email);
SELECT format('CREATE TABLE by_hash_%s PARTITION OF by_hash FOR VALUES WITH (MODULUS 4, REMAINDER %s)', r, r)
FROM generate_series(0, 3) r \gexec
INSERT INTO by_hash SELECT 'user' || i || '@mail.com' FROM generate_series(1, 2000) i;
CREATE INDEX by_hash_bloom ON by_hash USING bloomfilter (email) WITH (capacity = 1000);
SELECT checked('by_hash_bloom', 'user7@mail.com'::text) AS present;
SELECT checked('by_hash_bloom', 'ghost@mail.com'::text) AS absent;
SELECT count(*) AS false_negatives FROM by_hash WHERE NOT bloom_index_contains('by_hash_bloom', email);
SELECT count(*) FILTER (WHERE bloom_index_contains('by_hash_bloom', 'none' || i)) < 60 AS few_false_positives
FROM generate_series(1, 2000) i;

-- List partitions with a default, on a varchar column.
CREATE TABLE by_list (country varchar(2) NOT NULL, id int) PARTITION BY LIST (country);
CREATE TABLE by_list_de PARTITION OF by_list FOR VALUES IN ('de');
CREATE TABLE by_list_fr PARTITION OF by_list FOR VALUES IN ('fr', 'be');
CREATE TABLE by_list_other PARTITION OF by_list DEFAULT;
INSERT INTO by_list VALUES ('de', 1), ('fr', 2), ('be', 3), ('it', 4);
CREATE INDEX by_list_bloom ON by_list USING bloomfilter (country) WITH (capacity = 100);
SELECT checked('by_list_bloom', 'de'::text) AS de;
SELECT checked('by_list_bloom', 'be'::text) AS be;
SELECT checked('by_list_bloom', 'it'::text) AS it;
SELECT checked('by_list_bloom', 'nl'::text) AS nl;

-- Range partitions on an integer column, no default: a value no partition takes reads nothing,
-- nor does an integer out of the column's range; a level below partitioned by another column
-- is read whole.
CREATE TABLE by_range (id int NOT NULL, email text) PARTITION BY RANGE (id);
CREATE TABLE by_range_low PARTITION OF by_range FOR VALUES FROM (0) TO (1000);
CREATE TABLE by_range_high PARTITION OF by_range FOR VALUES FROM (1000) TO (2000) PARTITION BY HASH (email);
CREATE TABLE by_range_high_0 PARTITION OF by_range_high FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE by_range_high_1 PARTITION OF by_range_high FOR VALUES WITH (MODULUS 2, REMAINDER 1);
INSERT INTO by_range SELECT i, 'user' || i || '@mail.com' FROM generate_series(0, 1999) i WHERE i <> 1777;
-- Of a fixed size: which partitions' indexes a check reads depends on their answers, as listed.
CREATE INDEX by_range_bloom ON by_range USING bloomfilter (id) WITH (capacity = 2000, expansion = 0);
SELECT checked('by_range_bloom', 7) AS low;
SELECT checked('by_range_bloom', 1500) AS high;
SELECT checked('by_range_bloom', 1777) AS high_absent;
SELECT checked('by_range_bloom', 5000) AS no_partition;
SELECT checked('by_range_bloom', 5000000000) AS out_of_range;
SELECT count(*) AS false_negatives FROM by_range WHERE NOT bloom_index_contains('by_range_bloom', id);

-- A filled table attached as a partition: its rows are found through the routed check.
CREATE TABLE by_range_more (id int NOT NULL, email text);
INSERT INTO by_range_more SELECT i, 'user' || i || '@mail.com' FROM generate_series(2000, 2999) i;
ALTER TABLE by_range ATTACH PARTITION by_range_more FOR VALUES FROM (2000) TO (3000);
SELECT checked('by_range_bloom', 2500) AS attached;
SELECT count(*) AS false_negatives FROM by_range WHERE NOT bloom_index_contains('by_range_bloom', id);

-- A partition created two levels down after a check in this session: its rows are found.
CREATE TABLE by_level (id int NOT NULL, email text) PARTITION BY RANGE (id);
CREATE TABLE by_level_a PARTITION OF by_level FOR VALUES FROM (0) TO (100) PARTITION BY RANGE (id);
CREATE TABLE by_level_a1 PARTITION OF by_level_a FOR VALUES FROM (0) TO (50);
CREATE INDEX by_level_bloom ON by_level USING bloomfilter (email) WITH (capacity = 100);
INSERT INTO by_level VALUES (1, 'one@mail.com');
SELECT checked('by_level_bloom', 'one@mail.com'::text) AS before_new_partition;
CREATE TABLE by_level_a2 PARTITION OF by_level_a FOR VALUES FROM (50) TO (100);
INSERT INTO by_level VALUES (60, 'sixty@mail.com');
SELECT checked('by_level_bloom', 'sixty@mail.com'::text) AS in_new_partition;

-- A foreign table as a partition has no index (CREATE INDEX skips it, and the partitioned index
-- is valid): its rows are not in the filter, so the index answers nothing.
CREATE FOREIGN DATA WRAPPER regress_bloom_wrapper;
CREATE SERVER regress_bloom_server FOREIGN DATA WRAPPER regress_bloom_wrapper;
CREATE TABLE by_place (id int NOT NULL, email text) PARTITION BY RANGE (id);
CREATE TABLE by_place_local PARTITION OF by_place FOR VALUES FROM (0) TO (100);
CREATE FOREIGN TABLE by_place_remote PARTITION OF by_place FOR VALUES FROM (100) TO (200)
  SERVER regress_bloom_server;
CREATE INDEX by_place_bloom ON by_place USING bloomfilter (email) WITH (capacity = 100);
SELECT indisvalid FROM pg_index WHERE indexrelid = 'by_place_bloom'::regclass;
\set VERBOSITY sqlstate
SELECT bloom_index_contains('by_place_bloom', 'remote@mail.com');
\set VERBOSITY default
SELECT bloom_index_contains('by_place_bloom', 'remote@mail.com');
DROP TABLE by_place;
-- The same two levels down, under a partitioned index on the partition key, attached after a
-- check: a value routed elsewhere is refused too.
CREATE TABLE by_place (id int NOT NULL, email text) PARTITION BY RANGE (id);
CREATE TABLE by_place_a PARTITION OF by_place FOR VALUES FROM (0) TO (200) PARTITION BY RANGE (id);
CREATE TABLE by_place_a_local PARTITION OF by_place_a FOR VALUES FROM (0) TO (100);
CREATE INDEX by_place_bloom ON by_place USING bloomfilter (id) WITH (capacity = 100);
SELECT bloom_index_contains('by_place_bloom', 150) AS before_attach;
CREATE FOREIGN TABLE by_place_a_remote (id int NOT NULL, email text) SERVER regress_bloom_server;
ALTER TABLE by_place_a ATTACH PARTITION by_place_a_remote FOR VALUES FROM (100) TO (200);
\set VERBOSITY sqlstate
SELECT bloom_index_contains('by_place_bloom', 150);
SELECT bloom_index_contains('by_place_bloom', 50);
\set VERBOSITY default
DROP TABLE by_place;
DROP SERVER regress_bloom_server;
DROP FOREIGN DATA WRAPPER regress_bloom_wrapper;

-- A partition attached two levels down by another session while this transaction holds the
-- locks of an earlier check: the check that first locks its parent takes in the change, and
-- finds its rows.
CREATE EXTENSION IF NOT EXISTS dblink;
CREATE TABLE by_attach (id int NOT NULL, email text) PARTITION BY RANGE (id);
CREATE TABLE by_attach_a PARTITION OF by_attach FOR VALUES FROM (0) TO (100) PARTITION BY RANGE (id);
CREATE TABLE by_attach_a1 PARTITION OF by_attach_a FOR VALUES FROM (0) TO (100);
CREATE TABLE by_attach_b PARTITION OF by_attach FOR VALUES FROM (100) TO (200) PARTITION BY RANGE (id);
CREATE TABLE by_attach_b1 PARTITION OF by_attach_b FOR VALUES FROM (100) TO (150);
CREATE INDEX by_attach_bloom ON by_attach USING bloomfilter (id) WITH (capacity = 100);
CREATE TABLE by_attach_b2 (id int NOT NULL, email text);
INSERT INTO by_attach_b2 VALUES (170, 'late@mail.com');
SELECT dblink_connect('regress_other', format('dbname=%s port=%s host=%s', current_database(),
  current_setting('port'), split_part(current_setting('unix_socket_directories'), ',', 1))) AS other_session;
BEGIN;
SELECT bloom_index_contains('by_attach_bloom', 5) AS before_attach;
SELECT dblink_exec('regress_other',
  'ALTER TABLE regress_routing.by_attach_b ATTACH PARTITION regress_routing.by_attach_b2 FOR VALUES FROM (150) TO (200)');
SELECT bloom_index_contains('by_attach_bloom', 170) AS attached_elsewhere;
SELECT count(*) AS rows_170 FROM by_attach WHERE id = 170;
COMMIT;
-- A partition dropped by another session after a check stopped before reading its index: the
-- check locked the partitioned table, as a SELECT on it would, so the DROP waits for this
-- transaction, and the checks made meanwhile still read every partition.
CREATE TABLE by_tens (id int, email text) PARTITION BY RANGE (id);
SELECT format('CREATE TABLE by_tens_%s PARTITION OF by_tens FOR VALUES FROM (%s) TO (%s)', i, i * 10, i * 10 + 10)
FROM generate_series(1, 10) i \gexec
INSERT INTO by_tens SELECT i, 'e' || i FROM generate_series(10, 109) i;
CREATE INDEX by_tens_email ON by_tens USING bloomfilter (email) WITH (capacity = 100);
BEGIN;
SELECT bloom_index_contains('by_tens_email', 'e15') AS found_in_the_first_leaves;
SELECT dblink_send_query('regress_other', 'DROP TABLE regress_routing.by_tens_10') AS drop_sent;
DO $$
BEGIN
  FOR i IN 1 .. 600 LOOP
    EXIT WHEN EXISTS (SELECT 1 FROM pg_locks WHERE NOT granted AND relation = 'by_tens'::regclass);
    PERFORM pg_sleep(0.05);
  END LOOP;
END $$;
SELECT count(*) AS drop_waiting FROM pg_locks WHERE NOT granted AND relation = 'by_tens'::regclass;
SELECT bloom_index_contains('by_tens_email', 'absent') AS absent, bloom_index_contains('by_tens_email', 'e95') AS kept,
       bloom_index_contains('by_tens_email', 'e105') AS not_yet_dropped;
COMMIT;
SELECT * FROM dblink_get_result('regress_other') AS t(status text);
SELECT bloom_index_contains('by_tens_email', 'e95') AS kept_after_drop, count(*) AS partitions
FROM pg_inherits WHERE inhparent = 'by_tens'::regclass;
DROP TABLE by_tens;
SELECT dblink_disconnect('regress_other');
DROP TABLE by_attach;
DROP EXTENSION dblink;

RESET search_path;
DROP SCHEMA regress_routing CASCADE;
