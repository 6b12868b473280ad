-- bloomfilter 1.4: the bloomfilter index access method, a filter that PostgreSQL keeps current
-- itself, and the functions that check and read it.
\echo Use "ALTER EXTENSION bloomfilter UPDATE TO '1.4'" to load this file. \quit

-- The 64-bit key hash of format version 2, as bigint: support function 1 of every operator
-- class. smallint and integer are hashed as the bigint of the same value.
CREATE FUNCTION bloom_hash(pg_catalog.text) RETURNS pg_catalog.int8
    AS 'MODULE_PATHNAME', 'bloom_hash_bytes' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_hash(pg_catalog.bytea) RETURNS pg_catalog.int8
    AS 'MODULE_PATHNAME', 'bloom_hash_bytes' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_hash(pg_catalog.int2) RETURNS pg_catalog.int8
    AS 'MODULE_PATHNAME', 'bloom_hash_int2' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_hash(pg_catalog.int4) RETURNS pg_catalog.int8
    AS 'MODULE_PATHNAME', 'bloom_hash_int4' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_hash(pg_catalog.int8) RETURNS pg_catalog.int8
    AS 'MODULE_PATHNAME', 'bloom_hash_int8' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_hash(pg_catalog.uuid) RETURNS pg_catalog.int8
    AS 'MODULE_PATHNAME', 'bloom_hash_uuid' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_hash(pg_catalog.text) IS 'the 64-bit hash that places a text key in a filter (format version 2)';
COMMENT ON FUNCTION bloom_hash(pg_catalog.bytea) IS 'the 64-bit hash that places a bytea key in a filter (format version 2)';
COMMENT ON FUNCTION bloom_hash(pg_catalog.int2) IS 'the 64-bit hash that places an integer key in a filter (format version 2), as bigint';
COMMENT ON FUNCTION bloom_hash(pg_catalog.int4) IS 'the 64-bit hash that places an integer key in a filter (format version 2), as bigint';
COMMENT ON FUNCTION bloom_hash(pg_catalog.int8) IS 'the 64-bit hash that places a bigint key in a filter (format version 2)';
COMMENT ON FUNCTION bloom_hash(pg_catalog.uuid) IS 'the 64-bit hash that places a uuid key in a filter (format version 2)';

CREATE FUNCTION bloom_index_handler(pg_catalog.internal) RETURNS pg_catalog.index_am_handler
    AS 'MODULE_PATHNAME', 'bloom_index_handler' LANGUAGE C;
COMMENT ON FUNCTION bloom_index_handler(pg_catalog.internal) IS 'handler of the bloomfilter index access method';
CREATE ACCESS METHOD bloomfilter TYPE INDEX HANDLER bloom_index_handler;
COMMENT ON ACCESS METHOD bloomfilter IS 'a Bloom filter of a column, kept current by PostgreSQL: checked with bloom_index_contains, never scanned';

CREATE OPERATOR CLASS bloom_text_ops DEFAULT FOR TYPE pg_catalog.text USING bloomfilter AS
    FUNCTION 1 @extschema@.bloom_hash(pg_catalog.text);
CREATE OPERATOR CLASS bloom_varchar_ops DEFAULT FOR TYPE pg_catalog.varchar USING bloomfilter AS
    FUNCTION 1 @extschema@.bloom_hash(pg_catalog.text);
CREATE OPERATOR CLASS bloom_bytea_ops DEFAULT FOR TYPE pg_catalog.bytea USING bloomfilter AS
    FUNCTION 1 @extschema@.bloom_hash(pg_catalog.bytea);
CREATE OPERATOR CLASS bloom_int2_ops DEFAULT FOR TYPE pg_catalog.int2 USING bloomfilter AS
    FUNCTION 1 @extschema@.bloom_hash(pg_catalog.int2);
CREATE OPERATOR CLASS bloom_int4_ops DEFAULT FOR TYPE pg_catalog.int4 USING bloomfilter AS
    FUNCTION 1 @extschema@.bloom_hash(pg_catalog.int4);
CREATE OPERATOR CLASS bloom_int8_ops DEFAULT FOR TYPE pg_catalog.int8 USING bloomfilter AS
    FUNCTION 1 @extschema@.bloom_hash(pg_catalog.int8);
CREATE OPERATOR CLASS bloom_uuid_ops DEFAULT FOR TYPE pg_catalog.uuid USING bloomfilter AS
    FUNCTION 1 @extschema@.bloom_hash(pg_catalog.uuid);

CREATE FUNCTION bloom_index_contains(index pg_catalog.regclass, value pg_catalog.text) RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_index_contains(index pg_catalog.regclass, value pg_catalog.bytea) RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_index_contains(index pg_catalog.regclass, value pg_catalog.int8) RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_index_contains(index pg_catalog.regclass, value pg_catalog.uuid) RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_index_contains(pg_catalog.regclass, pg_catalog.text) IS 'false: no row of the index''s table has this key; true: one probably has';
COMMENT ON FUNCTION bloom_index_contains(pg_catalog.regclass, pg_catalog.bytea) IS 'false: no row of the index''s table has this key; true: one probably has';
COMMENT ON FUNCTION bloom_index_contains(pg_catalog.regclass, pg_catalog.int8) IS 'false: no row of the index''s table has this key; true: one probably has';
COMMENT ON FUNCTION bloom_index_contains(pg_catalog.regclass, pg_catalog.uuid) IS 'false: no row of the index''s table has this key; true: one probably has';

CREATE FUNCTION bloom_index_filter(index pg_catalog.regclass) RETURNS bloom
    AS 'MODULE_PATHNAME', 'bloom_index_filter' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_index_filter(pg_catalog.regclass) IS 'the filter of a bloomfilter index as a bloom value';

CREATE FUNCTION bloom_index_changes(index pg_catalog.regclass, since pg_catalog.pg_lsn,
    OUT next_lsn pg_catalog.pg_lsn, OUT byte_offset pg_catalog.int8, OUT bytes pg_catalog.bytea)
RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'bloom_index_changes' LANGUAGE C VOLATILE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_index_changes(pg_catalog.regclass, pg_catalog.pg_lsn) IS 'the header and the pages of a bloomfilter index''s filter changed after a WAL position, and the position to ask from next time';

CREATE FUNCTION bloom_index_info(index pg_catalog.regclass,
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
           OR i.estimated_count OPERATOR(pg_catalog.>) i.capacity::pg_catalog.float8
  FROM @extschema@.bloom_info(@extschema@.bloom_index_filter(index)) AS i;
END;
COMMENT ON FUNCTION bloom_index_info(pg_catalog.regclass) IS 'size, fill and estimated error rate of a bloomfilter index, and whether it needs a rebuild';
