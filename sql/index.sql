-- The bloomfilter index access method: building, adding, checking, expression, partial and
-- partitioned indexes, options, errors.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS bloomfilter;
RESET client_min_messages;

CREATE TABLE index_users (id bigserial PRIMARY KEY, email text NOT NULL, deleted_at timestamptz);
INSERT INTO index_users (email) SELECT 'user' || i || '@mail.com' FROM generate_series(1, 20000) i;
-- Of a fixed size (expansion = 0): its filter is one bloom value, as bloom_agg makes it.
CREATE INDEX index_users_email ON index_users USING bloomfilter (email)
  WITH (capacity = 50000, error_rate = 0.01, expansion = 0);

-- The article's test: user7 present, ghost absent. A string literal needs no cast.
SELECT bloom_index_contains('index_users_email', 'user7@mail.com') AS user7,
       bloom_index_contains('index_users_email', 'ghost@mail.com') AS ghost,
       bloom_index_contains('index_users_email', NULL::text) AS null_value;

-- The build holds exactly the bits of bloom_agg over the same rows (the header's counter too).
SELECT bloom_index_filter('index_users_email') = (SELECT bloom_agg(email, 50000, 0.01) FROM index_users)
  AS build_equals_bloom_agg;
SELECT capacity, error_rate, hashes, bytes, inserted, needs_rebuild FROM bloom_index_info('index_users_email');

-- Rows added after the build are found, by every way of adding them; no row is ever missing.
INSERT INTO index_users (email) VALUES ('late@mail.com');
COPY index_users (email) FROM stdin;
copied@mail.com
\.
BEGIN;
INSERT INTO index_users (email) VALUES ('in-transaction@mail.com');
SELECT bloom_index_contains('index_users_email', 'in-transaction@mail.com') AS seen_in_its_transaction;
ROLLBACK;
UPDATE index_users SET email = 'renamed@mail.com' WHERE email = 'user1@mail.com';
SELECT bloom_index_contains('index_users_email', 'late@mail.com') AS late,
       bloom_index_contains('index_users_email', 'copied@mail.com') AS copied,
       bloom_index_contains('index_users_email', 'renamed@mail.com') AS renamed;
SELECT count(*) AS false_negatives FROM index_users WHERE NOT bloom_index_contains('index_users_email', email);
-- After the build, the filter still equals bloom_agg over every key ever added (the rolled-back
-- one and the old value of the updated row included), but for the counter of keys.
SELECT substring(bloom_index_filter('index_users_email')::bytea FROM 37) =
       substring(bloom_add(bloom_agg(email, 50000, 0.01),
                           ARRAY['in-transaction@mail.com', 'user1@mail.com'])::bytea FROM 37) AS bits_equal
FROM index_users;
-- The false-positive rate of absent keys is about error_rate at capacity (less below it).
SELECT count(*) FILTER (WHERE bloom_index_contains('index_users_email', 'absent' || i)) < 100 AS few_false_positives
FROM generate_series(1, 20000) i;

-- Following changes: everything since 0/0 is the whole filter; then only the header and the
-- page a new key changed; nothing but the header when nothing changed.
SELECT string_agg(bytes, ''::bytea ORDER BY byte_offset) = bloom_index_filter('index_users_email')::bytea AS all_pages,
       count(DISTINCT next_lsn) AS one_next_lsn
FROM bloom_index_changes('index_users_email', '0/0');
SELECT max(next_lsn) AS next_lsn FROM bloom_index_changes('index_users_email', '0/0') \gset
SELECT count(*) AS rows_when_nothing_changed FROM bloom_index_changes('index_users_email', :'next_lsn');
CREATE TEMP TABLE followed_copy AS SELECT bloom_index_filter('index_users_email')::bytea AS f;
INSERT INTO index_users (email) VALUES ('followed@mail.com');
SELECT byte_offset = 0 AS is_header, length(bytes) FROM bloom_index_changes('index_users_email', :'next_lsn') ORDER BY byte_offset;
-- Applied to the copy, the changes give the filter as it is now.
SELECT overlay(f PLACING c.bytes FROM c.byte_offset::int + 1) = bloom_index_filter('index_users_email')::bytea AS copy_up_to_date
FROM followed_copy, bloom_index_changes('index_users_email', :'next_lsn') c WHERE c.byte_offset > 0;

-- A temporary table's index: its pages carry no WAL position, so every page is returned, and
-- a copy brought up to date with them holds a key added after the copy was made (one filter:
-- a layered value also has its layer 0 header among the rows).
CREATE TEMP TABLE index_temp (k text);
CREATE INDEX index_temp_k ON index_temp USING bloomfilter (k) WITH (capacity = 1000, expansion = 0);
CREATE TEMP TABLE temp_copy AS SELECT bloom_index_filter('index_temp_k')::bytea AS f;
SELECT max(next_lsn) AS temp_next_lsn FROM bloom_index_changes('index_temp_k', '0/0') \gset
INSERT INTO index_temp VALUES ('temp@mail.com');
SELECT count(*) AS page_rows,
       bool_and(bloom_contains(overlay(f PLACING c.bytes FROM c.byte_offset::int + 1)::bloom, 'temp@mail.com')) AS copy_has_key
FROM temp_copy, bloom_index_changes('index_temp_k', :'temp_next_lsn') c WHERE c.byte_offset > 0;

-- The planner never scans it, even with every other way off.
SET enable_seqscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM index_users WHERE email = 'user7@mail.com';
RESET enable_seqscan;
-- VACUUM removes nothing from it and keeps working.
DELETE FROM index_users WHERE id <= 10;
VACUUM index_users;
SELECT bloom_index_contains('index_users_email', 'user2@mail.com') AS deleted_still_probably_present;

-- Every key type, hashed as the bloom type hashes it: integers of every width as bigint.
CREATE TABLE index_keys (s smallint, i integer, b bigint, v varchar(40), t text, d bytea, u uuid);
INSERT INTO index_keys SELECT g, g * 1000, g::bigint * 1000000000, 'v' || g, 't' || g,
  int8send(g), md5(g::text)::uuid FROM generate_series(1, 1000) g;
CREATE INDEX index_keys_s ON index_keys USING bloomfilter (s) WITH (capacity = 1000, expansion = 0);
CREATE INDEX index_keys_i ON index_keys USING bloomfilter (i) WITH (capacity = 1000, expansion = 0);
CREATE INDEX index_keys_b ON index_keys USING bloomfilter (b) WITH (capacity = 1000, expansion = 0);
CREATE INDEX index_keys_v ON index_keys USING bloomfilter (v) WITH (capacity = 1000, expansion = 0);
CREATE INDEX index_keys_d ON index_keys USING bloomfilter (d) WITH (capacity = 1000, expansion = 0);
CREATE INDEX index_keys_u ON index_keys USING bloomfilter (u) WITH (capacity = 1000, expansion = 0);
SELECT bloom_index_filter('index_keys_s') = (SELECT bloom_agg(s::bigint, 1000, 0.01) FROM index_keys) AS smallint_as_bigint,
       bloom_index_filter('index_keys_i') = (SELECT bloom_agg(i::bigint, 1000, 0.01) FROM index_keys) AS integer_as_bigint,
       bloom_index_filter('index_keys_b') = (SELECT bloom_agg(b, 1000, 0.01) FROM index_keys) AS bigint,
       bloom_index_filter('index_keys_v') = (SELECT bloom_agg(v::text, 1000, 0.01) FROM index_keys) AS varchar_as_text,
       bloom_index_filter('index_keys_d') = (SELECT bloom_agg(d, 1000, 0.01) FROM index_keys) AS bytea,
       bloom_index_filter('index_keys_u') = (SELECT bloom_agg(u, 1000, 0.01) FROM index_keys) AS uuid;
SELECT count(*) FILTER (WHERE bloom_index_contains('index_keys_s', s::bigint) AND bloom_index_contains('index_keys_i', i::bigint)
                          AND bloom_index_contains('index_keys_b', b) AND bloom_index_contains('index_keys_v', v::text)
                          AND bloom_index_contains('index_keys_d', d) AND bloom_index_contains('index_keys_u', u)) AS all_found
FROM index_keys;
-- bloom_hash is what the operator classes hash.
SELECT bloom_hash(7::smallint) = bloom_hash(7::bigint) AS int2, bloom_hash(7) = bloom_hash(7::bigint) AS int4,
       bloom_hash('abc'::text) = bloom_hash('\x616263'::bytea) AS text_bytes;
-- An integer out of the column's range is certainly absent.
SELECT bloom_index_contains('index_keys_s', 70000) AS beyond_smallint;

-- An expression index follows the table's uniqueness rule: the value goes through it.
CREATE INDEX index_users_email_ci ON index_users USING bloomfilter (lower(email)) WITH (capacity = 50000, expansion = 0);
SELECT bloom_index_contains('index_users_email_ci', 'USER17@mail.com') AS upper_case_found,
       bloom_index_contains('index_users_email_ci', 'Ghost@mail.com') AS ghost;
SELECT bloom_index_filter('index_users_email_ci') = (SELECT bloom_agg(lower(email), 50000, 0.01) FROM index_users) AS ci_equals_agg;
-- A partial index answers for its predicate's rows.
UPDATE index_users SET deleted_at = now() WHERE email = 'user19@mail.com';
CREATE INDEX index_users_live ON index_users USING bloomfilter (email) WITH (capacity = 50000) WHERE deleted_at IS NULL;
SELECT bloom_index_contains('index_users_live', 'user18@mail.com') AS live, bloom_index_contains('index_users_live', 'user19@mail.com') AS deleted;

-- A partitioned table: one index on the parent, one per partition, and a partition attached
-- with its rows already in it.
CREATE TABLE index_accounts (id int NOT NULL, email text NOT NULL) PARTITION BY HASH (id);
CREATE TABLE index_accounts_0 PARTITION OF index_accounts FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE index_accounts_1 (id int NOT NULL, email text NOT NULL);
INSERT INTO index_accounts_1 SELECT i, 'acct' || i FROM generate_series(1, 1000) i WHERE satisfies_hash_partition('index_accounts'::regclass, 2, 1, i);
CREATE INDEX index_accounts_email ON index_accounts USING bloomfilter (email) WITH (capacity = 2000);
INSERT INTO index_accounts SELECT i, 'acct' || i FROM generate_series(1, 1000) i WHERE satisfies_hash_partition('index_accounts'::regclass, 2, 0, i);
SELECT count(*) FILTER (WHERE bloom_index_contains('index_accounts_email', 'acct' || i)) AS found_before_attach FROM generate_series(1, 1000) i;
ALTER TABLE index_accounts ATTACH PARTITION index_accounts_1 FOR VALUES WITH (MODULUS 2, REMAINDER 1);
SELECT count(*) FILTER (WHERE bloom_index_contains('index_accounts_email', 'acct' || i)) AS found_after_attach,
       count(*) FILTER (WHERE bloom_index_contains('index_accounts_email', 'none' || i)) < 20 AS few_false_positives
FROM generate_series(1, 1000) i;
SELECT bloom_index_filter('index_accounts_email');
-- An index that may miss keys answers nothing: a partitioned index some partition has no
-- index for, until one is attached.
CREATE INDEX index_accounts_email_only ON ONLY index_accounts USING bloomfilter (email) WITH (capacity = 2000);
SELECT bloom_index_contains('index_accounts_email_only', 'acct1');
CREATE INDEX index_accounts_0_email ON index_accounts_0 USING bloomfilter (email) WITH (capacity = 2000);
CREATE INDEX index_accounts_1_email ON index_accounts_1 USING bloomfilter (email) WITH (capacity = 2000);
ALTER INDEX index_accounts_email_only ATTACH PARTITION index_accounts_0_email;
SELECT bloom_index_contains('index_accounts_email_only', 'acct1');
ALTER INDEX index_accounts_email_only ATTACH PARTITION index_accounts_1_email;
SELECT bloom_index_contains('index_accounts_email_only', 'acct1') AS valid_once_every_partition_has_one;
-- A CREATE INDEX CONCURRENTLY that failed leaves an index that is not valid.
CREATE TABLE index_broken (k int);
INSERT INTO index_broken VALUES (1), (0);
CREATE INDEX CONCURRENTLY index_broken_k ON index_broken USING bloomfilter ((100 / k)) WITH (capacity = 10);
SELECT bloom_index_contains('index_broken_k', 100);

-- Resizing: a new capacity takes effect at the next build.
ALTER INDEX index_users_email SET (capacity = 100000);
SELECT capacity FROM bloom_index_info('index_users_email');
REINDEX INDEX index_users_email;
SELECT capacity, needs_rebuild FROM bloom_index_info('index_users_email');
REINDEX INDEX CONCURRENTLY index_users_email;
SELECT count(*) AS false_negatives_after_reindex FROM index_users WHERE NOT bloom_index_contains('index_users_email', email);
-- Of a fixed size past its capacity, it says it needs a rebuild.
CREATE INDEX index_users_small ON index_users USING bloomfilter (email) WITH (capacity = 1000, expansion = 0);
SELECT capacity, needs_rebuild, layers, advice FROM bloom_index_info('index_users_small');
-- Blocks larger than a page (20 hashes): counted across the pages each spans, the same numbers in
-- bloom_index_layers, bloom_index_info and bloom_info of the filter.
CREATE INDEX index_users_spanning ON index_users USING bloomfilter (email)
  WITH (capacity = 20000, error_rate = 0.000001, expansion = 0);
SELECT i.hashes, l.pages, l.fill > 0 AS counted, l.fill = i.fill AND l.estimated_error_rate = i.estimated_error_rate AS layers_as_info,
       (i.bits_set, i.fill, i.estimated_count, i.estimated_error_rate) = (b.bits_set, b.fill, b.estimated_count, b.estimated_error_rate) AS info_as_filter
FROM bloom_index_layers('index_users_spanning') l, bloom_index_info('index_users_spanning') i,
     bloom_info(bloom_index_filter('index_users_spanning')) b;
DROP INDEX index_users_spanning;

-- Errors, with their SQLSTATEs.
\set VERBOSITY sqlstate
CREATE INDEX ON index_users USING bloomfilter (email) WITH (error_rate = 0);
CREATE INDEX ON index_users USING bloomfilter (email) WITH (error_rate = 1);
CREATE INDEX ON index_users USING bloomfilter (email) WITH (capacity = 0);
CREATE INDEX ON index_users USING bloomfilter (email) WITH (fill = 3);
-- Up to 8 key columns (sql/index_composite.sql).
CREATE INDEX ON index_users USING bloomfilter (email, id, email, id, email, id, email, id, email);
CREATE INDEX ON index_users USING bloomfilter (deleted_at);
CREATE UNIQUE INDEX ON index_users USING bloomfilter (email);
CREATE UNLOGGED TABLE index_unlogged (k text);
CREATE INDEX ON index_unlogged USING bloomfilter (k);
SELECT bloom_index_contains('index_users_pkey', 'x');
SELECT bloom_index_contains('index_users', 'x');
SELECT bloom_index_contains('index_users_email', 42);
SELECT bloom_index_contains('index_keys_u', 'not a uuid'::text);
SELECT bloom_index_contains(0::regclass, 'x');
SELECT bloom_index_filter(4294967295::oid::regclass);
SELECT * FROM bloom_index_shards('index_users_email');
CREATE INDEX index_users_two ON index_users USING bloomfilter ((email || id));
SELECT bloom_index_contains('index_users_two', 'x');
\set VERBOSITY default
SELECT bloom_index_contains('index_users_pkey', 'x');
-- The filter of an index on an expression of several columns is read as any other.
SELECT bloom_contains(bloom_index_filter('index_users_two'), 'user20@mail.com20') AS two_columns_filter,
       (SELECT count(*) > 1 FROM bloom_index_changes('index_users_two', '0/0')) AS two_columns_changes;

-- A BEFORE UPDATE trigger that changes the key when the UPDATE names another column: the new
-- key is added (the executor's guess that the index is unchanged comes from the columns named).
CREATE TABLE index_triggered (id int PRIMARY KEY, email text, pending_email text);
CREATE INDEX index_triggered_email ON index_triggered USING bloomfilter (email) WITH (capacity = 100);
CREATE FUNCTION pg_temp.confirm_email() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.email := NEW.pending_email;
  RETURN NEW;
END $$;
CREATE TRIGGER index_triggered_confirm BEFORE UPDATE ON index_triggered
  FOR EACH ROW EXECUTE FUNCTION pg_temp.confirm_email();
INSERT INTO index_triggered VALUES (1, 'old@mail.com', NULL);
UPDATE index_triggered SET pending_email = 'confirmed@mail.com';
SELECT email, bloom_index_contains('index_triggered_email', email) AS found FROM index_triggered;

DROP TABLE index_users, index_keys, index_accounts, index_unlogged, index_broken, index_triggered;

-- What a session keeps for checking an index is freed once the index is dropped (at the next
-- check of another index): a session that checks many short-lived indexes does not grow.
\c
CREATE TABLE index_dropped (k text);
SELECT format('CREATE INDEX index_dropped_%s ON index_dropped USING bloomfilter (k) WITH (capacity = 10)', i)
FROM generate_series(1, 5) i \gexec
CREATE TABLE index_kept (k text);
CREATE INDEX index_kept_k ON index_kept USING bloomfilter (k) WITH (capacity = 10);
SELECT count(*) FILTER (WHERE bloom_index_contains(('index_dropped_' || i)::regclass, 'x')) AS found
FROM generate_series(1, 5) i;
SELECT count(*) AS checks_kept FROM pg_backend_memory_contexts WHERE name = 'bloomfilter index check';
DROP TABLE index_dropped;
SELECT bloom_index_contains('index_kept_k', 'x') AS found;
SELECT count(*) AS checks_kept FROM pg_backend_memory_contexts WHERE name = 'bloomfilter index check';
DROP TABLE index_kept;
