-- Aggregates: every form, NULLs, empty input, parallel plans, two aggregates in one query.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS bloomfilter;
RESET client_min_messages;

CREATE TABLE agg_input (id bigint, email text, data bytea, u uuid);
INSERT INTO agg_input
SELECT i, CASE WHEN i % 10 = 0 THEN NULL ELSE 'user' || (i % 5000) || '@mail.com' END,
       int8send(i), md5(i::text)::uuid
FROM generate_series(1, 20000) i;

-- Auto-sized for the distinct non-NULL values (4,500 emails here); inserted counts every non-NULL row.
SELECT capacity, error_rate, hashes, inserted FROM bloom_info((SELECT bloom_agg(email) FROM agg_input));
SELECT capacity, error_rate FROM bloom_info((SELECT bloom_agg(email, 0.05) FROM agg_input));
SELECT capacity, error_rate, inserted FROM bloom_info((SELECT bloom_agg(email, 10000, 0.001) FROM agg_input));

-- The same filter as bloom_add over the same values, whatever their order.
SELECT bloom_agg(email) = bloom_add(bloom_empty(4500, 0.01), array_agg(email ORDER BY id DESC)) AS auto_equals_add,
       bloom_agg(email, 0.05) = bloom_add(bloom_empty(4500, 0.05), array_agg(email)) AS rate_equals_add,
       bloom_agg(email, 10000, 0.001) = bloom_add(bloom_empty(10000, 0.001), array_agg(email)) AS sized_equals_add
FROM agg_input;

-- Other key types.
SELECT bloom_agg(id) = bloom_add(bloom_empty(20000), array_agg(id)) AS bigint_agg,
       bloom_agg(data) = bloom_add(bloom_empty(20000), array_agg(data)) AS bytea_agg,
       bloom_agg(u) = bloom_add(bloom_empty(20000), array_agg(u)) AS uuid_agg,
       bloom_agg(id, 0.1) = bloom_add(bloom_empty(20000, 0.1), array_agg(id)) AS bigint_rate_agg,
       bloom_agg(u, 100, 0.2) = bloom_add(bloom_empty(100, 0.2), array_agg(u)) AS uuid_sized_agg
FROM agg_input;
SELECT count(*) AS false_negatives
FROM agg_input, (SELECT bloom_agg(id) AS fi, bloom_agg(u) AS fu, bloom_agg(data, 0.001) AS fd FROM agg_input) f
WHERE NOT (bloom_contains(fi, id) AND bloom_contains(fu, u) AND bloom_contains(fd, data));

-- No rows, or only NULLs: NULL, as other aggregates; coalesce with bloom_empty for an empty filter.
SELECT bloom_agg(email) IS NULL AS no_rows, bloom_agg(email, 10, 0.01) IS NULL AS no_rows_sized,
       bloom_union_agg(NULL::bloom) IS NULL AS no_filters
FROM agg_input WHERE false;
SELECT bloom_agg(email) IS NULL AS only_nulls FROM agg_input WHERE email IS NULL;
SELECT inserted FROM bloom_info((SELECT bloom_agg(email, 10, 0.01) FROM agg_input WHERE email IS NULL));

-- Per group, and two aggregates in one query (they may share a transition state).
SELECT id % 3 AS g, bloom_contains(bloom_agg(email), 'user1@mail.com') AS has_user1,
       (SELECT capacity FROM bloom_info(bloom_agg(email))) AS capacity
FROM agg_input GROUP BY 1 ORDER BY 1;
SELECT bloom_agg(email) = bloom_agg(email) AS shared_state_same,
       bloom_agg(email) = bloom_agg(email, 0.01) AS auto_forms_same,
       bloom_agg(email, 4500, 0.01) = bloom_agg(email) AS sized_equals_auto
FROM agg_input;

-- bloom_union_agg.
CREATE TEMP TABLE shards AS
SELECT bloom_shard(email, 4) AS shard, bloom_agg(email, 4000, 0.01) AS f FROM agg_input WHERE email IS NOT NULL GROUP BY 1;
SELECT count(*) AS shard_count FROM shards;
SELECT bloom_union_agg(f) = (SELECT bloom_agg(email, 4000, 0.01) FROM agg_input) AS union_of_shards_equals_whole
FROM shards;
SELECT (SELECT inserted FROM bloom_info(bloom_union_agg(f))) AS inserted FROM shards;

-- A forced parallel plan: Partial Aggregate in workers, the same bytes as the serial plan.
CREATE TABLE big_input AS
SELECT i AS id, 'user' || i || '@mail.com' AS email FROM generate_series(1, 200000) i;
ANALYZE big_input;
SET max_parallel_workers_per_gather = 0;
CREATE TEMP TABLE serial_result AS
SELECT bloom_agg(email) AS a, bloom_agg(email, 300000, 0.02) AS s, bloom_union_agg(bloom_add(bloom_empty(10), email)) AS u
FROM big_input;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF)
SELECT bloom_agg(email), bloom_agg(email, 300000, 0.02), bloom_union_agg(bloom_add(bloom_empty(10), email)) FROM big_input;
SELECT bloom_agg(email) = (SELECT a FROM serial_result) AS parallel_auto_equals_serial,
       bloom_agg(email, 300000, 0.02) = (SELECT s FROM serial_result) AS parallel_sized_equals_serial,
       bloom_union_agg(bloom_add(bloom_empty(10), email)) = (SELECT u FROM serial_result) AS parallel_union_equals_serial
FROM big_input;
-- The same with every email 40 times over: the workers drop repeats before sending their states.
CREATE TABLE repeated_input AS SELECT i AS id, 'user' || (i % 5000) || '@mail.com' AS email
FROM generate_series(1, 200000) i;
ANALYZE repeated_input;
SET max_parallel_workers_per_gather = 0;
CREATE TEMP TABLE serial_repeated AS SELECT bloom_agg(email) AS a FROM repeated_input;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT bloom_agg(email) FROM repeated_input;
-- The bits (past the 36-byte header) are those of a filter sized for the 5000 distinct emails.
SELECT bloom_agg(email) = (SELECT a FROM serial_repeated) AS parallel_equals_serial,
       substring(bloom_agg(email)::bytea FROM 37)
         = substring(bloom_add(bloom_empty(5000), (SELECT array_agg(DISTINCT email) FROM repeated_input))::bytea FROM 37)
         AS bits_of_a_filter_for_distinct,
       (SELECT capacity || ' ' || inserted FROM bloom_info(bloom_agg(email))) AS capacity_inserted
FROM repeated_input;
-- Without the leader's share, and with one worker, the bytes are still the serial plan's.
SET parallel_leader_participation = off;
SELECT bloom_agg(email) = (SELECT a FROM serial_result) AS workers_only_equals_serial FROM big_input;
RESET parallel_leader_participation;
SET max_parallel_workers_per_gather = 1;
SELECT bloom_agg(email) = (SELECT a FROM serial_result) AS one_worker_equals_serial FROM big_input;
-- Two aggregates of the same functions share one transition state, which is serialized once
-- for each of them.
CREATE AGGREGATE same_as_bloom_agg(text) (
    SFUNC = bloom_agg_transfn, STYPE = internal,
    FINALFUNC = bloom_agg_finalfn, FINALFUNC_MODIFY = READ_ONLY,
    COMBINEFUNC = bloom_agg_combinefn, SERIALFUNC = bloom_agg_serialfn,
    DESERIALFUNC = bloom_agg_deserialfn, PARALLEL = SAFE
);
SET max_parallel_workers_per_gather = 2;
SELECT bloom_agg(email) = (SELECT a FROM serial_result) AS first_equals_serial,
       same_as_bloom_agg(email) = (SELECT a FROM serial_result) AS second_equals_serial
FROM big_input;
DROP AGGREGATE same_as_bloom_agg(text);
RESET ALL;

-- As window aggregates: each row's running filter holds that row's email and those before it
-- (user299 is the last row's: earlier filters have it only as a false positive).
SELECT count(*) FILTER (WHERE bloom_contains(running_sized, email)) AS sized_found,
       count(*) FILTER (WHERE bloom_contains(running_auto, email)) AS auto_found,
       count(*) FILTER (WHERE bloom_contains(running_sized, 'user299@mail.com')) AS rows_with_user299,
       count(*) AS rows
FROM (SELECT email,
             bloom_agg(email, 5000, 0.01) OVER (ORDER BY id) AS running_sized,
             bloom_agg(email) OVER (ORDER BY id) AS running_auto
      FROM agg_input WHERE id <= 300 AND email IS NOT NULL) w;
