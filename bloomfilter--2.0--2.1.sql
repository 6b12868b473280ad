-- bloomfilter 2.0 -> 2.1: bloom_index_verify, and bloom_index_info's needs_rebuild with a margin
-- for the estimate's own error.
\echo Use "ALTER EXTENSION bloomfilter UPDATE TO '2.1'" to load this file. \quit

-- Whether the index holds the key of every row of its table the transaction's snapshot sees, as
-- amcheck's heapallindexed checks a btree: the rows checked, or XX002 naming the first row whose
-- key is missing. Reads the whole table.
CREATE FUNCTION bloom_index_verify(index pg_catalog.regclass) RETURNS pg_catalog.int8
    AS 'MODULE_PATHNAME', 'bloom_index_verify' LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION bloom_index_verify(pg_catalog.regclass) IS 'checks that a bloomfilter index holds the key of every visible row of its table: the rows checked, or an error (XX002) naming the first row whose key is missing';

-- needs_rebuild allows for the count estimate's own error: its bias (about +0.02% of the keys, from
-- estimating each block apart) and four standard deviations of the estimator at capacity keys
-- (m/k^2 (e^x - 1 - x), x = k n / m), so that a filter just built at its capacity does not say it
-- needs a rebuild.
CREATE OR REPLACE FUNCTION bloom_index_info(index pg_catalog.regclass,
    OUT capacity pg_catalog.int8, OUT error_rate pg_catalog.float8, OUT bits pg_catalog.int8,
    OUT hashes pg_catalog.int4, OUT bytes pg_catalog.int8, OUT inserted pg_catalog.int8,
    OUT bits_set pg_catalog.int8, OUT fill pg_catalog.float8, OUT estimated_count pg_catalog.float8,
    OUT estimated_error_rate pg_catalog.float8, OUT needs_rebuild pg_catalog.bool)
LANGUAGE sql STABLE STRICT PARALLEL SAFE
BEGIN ATOMIC
  SELECT i.capacity, i.error_rate, i.bits, i.hashes, i.bytes, i.inserted, i.bits_set, i.fill,
         i.estimated_count, i.estimated_error_rate,
         -- Rebuild (with a larger capacity) when a check is now noticeably more likely to be
         -- wrong than asked for, or the filter holds more keys than it was sized for.
         i.estimated_error_rate OPERATOR(pg_catalog.>) (1.05::pg_catalog.float8 OPERATOR(pg_catalog.*) i.error_rate)
           OR i.estimated_count OPERATOR(pg_catalog.>) (
                (1.001::pg_catalog.float8 OPERATOR(pg_catalog.*) i.capacity::pg_catalog.float8)
                OPERATOR(pg_catalog.+) (4::pg_catalog.float8 OPERATOR(pg_catalog.*) pg_catalog.sqrt(
                  (i.bits::pg_catalog.float8 OPERATOR(pg_catalog./) (i.hashes OPERATOR(pg_catalog.*) i.hashes)::pg_catalog.float8)
                  OPERATOR(pg_catalog.*) ((pg_catalog.exp(x.x) OPERATOR(pg_catalog.-) 1::pg_catalog.float8) OPERATOR(pg_catalog.-) x.x))))
  FROM @extschema@.bloom_info(@extschema@.bloom_index_filter(index)) AS i,
       LATERAL (SELECT (i.hashes::pg_catalog.float8 OPERATOR(pg_catalog.*) i.capacity::pg_catalog.float8)
                       OPERATOR(pg_catalog./) i.bits::pg_catalog.float8 AS x) AS x;
END;
COMMENT ON FUNCTION bloom_index_info(pg_catalog.regclass) IS 'size, fill and estimated error rate of a bloomfilter index, and whether it needs a rebuild';
