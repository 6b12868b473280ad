-- The auto-sized bloom_agg stays within work_mem x hash_mem_multiplier: past it, its hashes go
-- to temporary files, and the result is the in-memory result, byte for byte: serial, grouped
-- (hashed and sorted), parallel (the workers' spilled states sent to the leader), and a window.
-- temp_file_limit bounds it with the server's own error, and no file is left behind.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS bloomfilter;
RESET client_min_messages;
\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/helpers.sql

-- 300,000 distinct keys in 7 groups; a group's keys twice over.
CREATE TABLE spill_input AS
SELECT 'user' || i || '@mail.com' AS email, i % 7 AS g FROM generate_series(1, 300000) i;
INSERT INTO spill_input SELECT email, g FROM spill_input WHERE g = 3;
ANALYZE spill_input;

-- The temporary files this database has written so far (the statistics of this session are
-- sent before the next statement).
CREATE FUNCTION temp_files_written() RETURNS bigint LANGUAGE sql AS $$
  SELECT pg_stat_clear_snapshot();
  SELECT temp_files FROM pg_stat_database WHERE datname = current_database() $$;

SET max_parallel_workers_per_gather = 0;
SET work_mem = '1GB';
CREATE TABLE in_memory AS
SELECT bloom_agg(email) AS a, bloom_agg(email, 0.001) AS r, bloom_agg(email::bytea) AS b FROM spill_input;
CREATE TABLE in_memory_groups AS
SELECT g, bloom_agg(email) AS a, bloom_agg(email, 0.001) AS r FROM spill_input GROUP BY g;
SELECT pg_stat_force_next_flush();
SELECT temp_files_written() AS before \gset

SET work_mem = '64kB';
-- Serial.
SELECT s.a = m.a AS auto_same, s.r = m.r AS rate_same, s.b = m.b AS bytea_same,
       (bloom_info(s.a)).inserted AS inserted
FROM (SELECT bloom_agg(email) AS a, bloom_agg(email, 0.001) AS r, bloom_agg(email::bytea) AS b
      FROM spill_input) s, in_memory m;
SELECT pg_stat_force_next_flush();
SELECT temp_files_written() > :before AS spilled_to_temporary_files;
-- Grouped, by hashing and by sorting.
SET enable_sort = off;
SELECT count(*) AS groups, count(*) FILTER (WHERE s.a = m.a AND s.r = m.r) AS same
FROM (SELECT g, bloom_agg(email) AS a, bloom_agg(email, 0.001) AS r FROM spill_input GROUP BY g) s
JOIN in_memory_groups m USING (g);
RESET enable_sort;
SET enable_hashagg = off;
SELECT count(*) AS groups, count(*) FILTER (WHERE s.a = m.a AND s.r = m.r) AS same
FROM (SELECT g, bloom_agg(email) AS a, bloom_agg(email, 0.001) AS r FROM spill_input GROUP BY g) s
JOIN in_memory_groups m USING (g);
RESET enable_hashagg;
-- Parallel: every worker's state spills, is merged and written to a file the leader reads and
-- deletes; the leader's own state spills again.
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT bloom_agg(email) FROM spill_input;
SELECT s.a = m.a AS auto_same, s.r = m.r AS rate_same
FROM (SELECT bloom_agg(email) AS a, bloom_agg(email, 0.001) AS r FROM spill_input) s, in_memory m;
SELECT count(*) AS groups, count(*) FILTER (WHERE s.a = m.a AND s.r = m.r) AS same
FROM (SELECT g, bloom_agg(email) AS a, bloom_agg(email, 0.001) AS r FROM spill_input GROUP BY g) s
JOIN in_memory_groups m USING (g);
-- A sorted grouping whose LIMIT stops the leader before it reads every worker's state: the files
-- of the states it never read are deleted at the end of the transaction.
SET enable_hashagg = off;
BEGIN;
SELECT g, bloom_agg(email) IS NULL AS empty FROM spill_input GROUP BY g ORDER BY g LIMIT 1;
COMMIT;
SELECT count(*) AS files_left FROM pg_ls_dir('base/pgsql_tmp', true, false);
RESET enable_hashagg;
SET max_parallel_workers_per_gather = 0;

-- A window aggregate calls the final function row after row on a growing state: after each
-- spill the final merges the runs and the state goes on.
SET work_mem = '1GB';
CREATE TABLE window_in_memory AS
SELECT i, bloom_agg(email) OVER (ORDER BY i ROWS UNBOUNDED PRECEDING) AS a
FROM (SELECT row_number() OVER (ORDER BY email) AS i, email FROM spill_input LIMIT 12000) s;
SET work_mem = '64kB';
SELECT count(*) AS rows, count(*) FILTER (WHERE s.a = m.a) AS same
FROM (SELECT i, bloom_agg(email) OVER (ORDER BY i ROWS UNBOUNDED PRECEDING) AS a
      FROM (SELECT row_number() OVER (ORDER BY email) AS i, email FROM spill_input LIMIT 12000) s) s
JOIN window_in_memory m USING (i) WHERE i % 1000 = 0 OR i > 11990;

-- temp_file_limit: the server's own error (its SQLSTATE: the message's wording changes between
-- versions), and nothing left in pgsql_tmp.
SET temp_file_limit = '200kB';
SELECT left(pg_temp.error_of('SELECT bloom_agg(email) FROM spill_input'), 5) AS sqlstate;
SELECT left(pg_temp.error_of('SELECT g, bloom_agg(email) FROM spill_input GROUP BY g'), 5) AS sqlstate;
RESET temp_file_limit;
SELECT count(*) AS files_left FROM pg_ls_dir('base/pgsql_tmp', true, false);
-- A failed statement in a subtransaction leaves nothing either, and the session goes on.
BEGIN;
SAVEPOINT s;
SET LOCAL temp_file_limit = '200kB';
\set VERBOSITY sqlstate
SELECT bloom_agg(email) IS NULL FROM spill_input;
\set VERBOSITY default
ROLLBACK TO SAVEPOINT s;
SELECT count(*) AS files_left FROM pg_ls_dir('base/pgsql_tmp', true, false);
SELECT s.a = m.a AS auto_same FROM (SELECT bloom_agg(email) AS a FROM spill_input) s, in_memory m;
COMMIT;
SELECT count(*) AS files_left FROM pg_ls_dir('base/pgsql_tmp', true, false);
RESET ALL;

DROP TABLE spill_input, in_memory, in_memory_groups, window_in_memory;
DROP FUNCTION temp_files_written();
