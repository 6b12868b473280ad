-- Aggregates over no rows and over only NULLs, in every plan shape: plain, grouped (sorted and
-- hashed), window frames, and forced parallel plans of each. The planners of PostgreSQL 17 and 18
-- choose some of these plans differently: aggregate_nulls_1.out and _2.out. The result is NULL (the sized
-- bloom_agg gives an empty filter for only NULL keys), never a crash.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS bloomfilter;
RESET client_min_messages;
CREATE TABLE null_input (id int, g int, f bloom, email text, n bigint, u uuid, b bytea);
INSERT INTO null_input SELECT i, i % 3, NULL, NULL, NULL, NULL, NULL FROM generate_series(1, 30000) i;
ANALYZE null_input;

-- Every aggregate per group (true where it returned NULL), the groups in one array: ordered
-- without a Sort node, which would change the plans.
\set grouped 'SELECT g, bloom_union_agg(f) IS NULL AS union_null, bloom_agg(email) IS NULL AS auto_null, bloom_agg(email, 0.1) IS NULL AS rate_null, bloom_agg(n) IS NULL AS bigint_null, bloom_agg(u) IS NULL AS uuid_null, bloom_agg(b) IS NULL AS bytea_null, (bloom_info(bloom_agg(email, 10, 0.01))).inserted AS sized_inserted FROM null_input GROUP BY g'

-- No rows at all, and only NULLs, without groups.
SELECT bloom_union_agg(f) IS NULL AS union_null, bloom_agg(email) IS NULL AS auto_null,
       bloom_agg(email, 10, 0.01) IS NULL AS sized_null FROM null_input WHERE false;
SELECT bloom_union_agg(f) IS NULL AS union_null, bloom_agg(email) IS NULL AS auto_null,
       bloom_agg(n, 0.1) IS NULL AS rate_null,
       (SELECT inserted FROM bloom_info(bloom_agg(email, 10, 0.01))) AS sized_inserted
FROM null_input;
SELECT bloom_union_agg(NULL::bloom) IS NULL AS literal_null;
SELECT bloom_union_agg(f) IS NULL AS union_null FROM (VALUES (NULL::bloom), (NULL)) v(f);

-- Groups of only NULLs, sorted and hashed.
SET enable_hashagg = off;
SELECT array_agg(s ORDER BY s.g) AS groups FROM (:grouped) s;
SET enable_hashagg = on;
SET enable_sort = off;
SELECT array_agg(s ORDER BY s.g) AS groups FROM (:grouped) s;
RESET enable_sort;

-- Window frames of only NULLs, then frames where a filter arrives.
SELECT id, bloom_union_agg(f) OVER w IS NULL AS union_null, bloom_agg(email) OVER w IS NULL AS auto_null
FROM (VALUES (1, NULL::bloom, NULL::text), (2, NULL, NULL), (3, bloom_empty(10), 'a')) v(id, f, email)
WINDOW w AS (ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)
ORDER BY id;

-- Forced parallel plans: the workers' states are NULL too.
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT bloom_union_agg(f), bloom_agg(email) FROM null_input;
SELECT bloom_union_agg(f) IS NULL AS union_null, bloom_agg(email) IS NULL AS auto_null,
       bloom_agg(u, 0.1) IS NULL AS rate_null,
       (SELECT inserted FROM bloom_info(bloom_agg(email, 10, 0.01))) AS sized_inserted
FROM null_input;
-- Workers alone, and groups in parallel (sorted, then hashed): partial aggregates per group,
-- when sending rows costs more than sending states.
SET parallel_leader_participation = off;
SELECT bloom_union_agg(f) IS NULL AS union_null, bloom_agg(email) IS NULL AS auto_null FROM null_input;
RESET parallel_leader_participation;
RESET parallel_tuple_cost;
SET enable_hashagg = off;
EXPLAIN (COSTS OFF) SELECT array_agg(s ORDER BY s.g) AS groups FROM (:grouped) s;
SELECT array_agg(s ORDER BY s.g) AS groups FROM (:grouped) s;
SET enable_hashagg = on;
SET enable_sort = off;
EXPLAIN (COSTS OFF) SELECT array_agg(s ORDER BY s.g) AS groups FROM (:grouped) s;
SELECT array_agg(s ORDER BY s.g) AS groups FROM (:grouped) s;
-- Some groups with a filter, some with only NULLs, in one parallel plan.
SELECT g, bloom_union_agg(CASE WHEN g = 1 AND id % 1000 = 0 THEN bloom_add(bloom_empty(10), id::bigint) END) IS NULL AS union_null
FROM null_input GROUP BY g ORDER BY g;
RESET ALL;

DROP TABLE null_input;
