-- A grouped parallel bloom_agg stays within work_mem: the Finalize HashAggregate spills to disk
-- when its states pass it, as it does for built-in aggregates, and its result is the serial
-- plan's, byte for byte. 1M rows in 20,000 groups, work_mem = 4MB.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS bloomfilter;
RESET client_min_messages;
CREATE TABLE grouped_input AS
SELECT i AS id, i % 20000 AS g, 'user' || i || '@mail.com' AS email FROM generate_series(1, 1000000) i;
-- Too few groups for the planner to expect a large hash table, so it aggregates in the workers
-- and again in the leader.
ALTER TABLE grouped_input ALTER COLUMN g SET (n_distinct = 100);
ANALYZE grouped_input;

-- The aggregate nodes of a query's plan, as EXPLAIN ANALYZE measured them.
CREATE FUNCTION aggregate_nodes(query text) RETURNS TABLE (mode text, strategy text, peak_memory_kb bigint)
LANGUAGE plpgsql AS $$
DECLARE
  plan jsonb;
BEGIN
  EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, FORMAT JSON) ' || query INTO plan;
  RETURN QUERY
  SELECT n->>'Partial Mode', n->>'Strategy', (n->>'Peak Memory Usage')::bigint
  FROM jsonb_path_query(plan, 'strict $.**') AS n
  WHERE jsonb_typeof(n) = 'object' AND n->>'Node Type' = 'Aggregate';
END $$;

SET work_mem = '4MB';
SET enable_sort = off;
SET max_parallel_workers_per_gather = 0;
CREATE TEMP TABLE serial_groups AS
SELECT g, bloom_agg(email) AS a, bloom_agg(email, 100, 0.01) AS s FROM grouped_input GROUP BY g;
SET parallel_setup_cost = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT g, bloom_agg(email) FROM grouped_input GROUP BY g;
-- The leader's Finalize node keeps only its groups' states: at most 64 MB.
SELECT mode, strategy, peak_memory_kb <= 65536 AS within_64_mb
FROM aggregate_nodes('SELECT g, bloom_agg(email) FROM grouped_input GROUP BY g') WHERE mode = 'Finalize';
SELECT mode, strategy, peak_memory_kb <= 65536 AS within_64_mb
FROM aggregate_nodes('SELECT g, bloom_agg(email, 100, 0.01) FROM grouped_input GROUP BY g') WHERE mode = 'Finalize';
SELECT count(*) AS groups,
       count(*) FILTER (WHERE p.a = s.a) AS auto_same_as_serial,
       count(*) FILTER (WHERE p.s = s.s) AS sized_same_as_serial
FROM (SELECT g, bloom_agg(email) AS a, bloom_agg(email, 100, 0.01) AS s FROM grouped_input GROUP BY g) p
JOIN serial_groups s USING (g);
RESET ALL;

DROP FUNCTION aggregate_nodes(text);
DROP TABLE grouped_input;
