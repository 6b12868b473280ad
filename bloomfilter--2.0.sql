-- bloomfilter 2.0: the bloom type, its functions and aggregates, and the bloomfilter index access
-- method with the functions that check and read its indexes.
\echo Use "CREATE EXTENSION bloomfilter" to load this file. \quit

CREATE TYPE bloom;

CREATE FUNCTION bloom_in(pg_catalog.cstring) RETURNS bloom
    AS 'MODULE_PATHNAME', 'bloom_in' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_out(bloom) RETURNS pg_catalog.cstring
    AS 'MODULE_PATHNAME', 'bloom_out' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_recv(pg_catalog.internal) RETURNS bloom
    AS 'MODULE_PATHNAME', 'bloom_recv' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_send(bloom) RETURNS pg_catalog.bytea
    AS 'MODULE_PATHNAME', 'bloom_send' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

-- STORAGE external: the bits do not compress, and an uncompressed out-of-line value can be read
-- in slices, which is what makes a point lookup cheap.
CREATE TYPE bloom (
    INPUT = bloom_in,
    OUTPUT = bloom_out,
    RECEIVE = bloom_recv,
    SEND = bloom_send,
    INTERNALLENGTH = VARIABLE,
    ALIGNMENT = int4,
    STORAGE = external
);
COMMENT ON TYPE bloom IS 'Bloom filter: answers "certainly absent" or "probably present" for text, bytea, bigint and uuid keys';
COMMENT ON FUNCTION bloom_in(pg_catalog.cstring) IS 'text input of bloom: \x followed by the hex of the byte format';
COMMENT ON FUNCTION bloom_out(bloom) IS 'text output of bloom: \x followed by the hex of the byte format';
COMMENT ON FUNCTION bloom_recv(pg_catalog.internal) IS 'binary input of bloom: the byte format, validated';
COMMENT ON FUNCTION bloom_send(bloom) IS 'binary output of bloom: the byte format';

CREATE FUNCTION bloom_from_bytea(pg_catalog.bytea) RETURNS bloom
    AS 'MODULE_PATHNAME', 'bloom_from_bytea' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_from_bytea(pg_catalog.bytea) IS 'validates a byte-format value and returns it as a bloom';
-- The same bytes on both sides: bloom to bytea needs no function, bytea to bloom is validated.
CREATE CAST (bloom AS pg_catalog.bytea) WITHOUT FUNCTION;
CREATE CAST (pg_catalog.bytea AS bloom) WITH FUNCTION bloom_from_bytea(pg_catalog.bytea);

CREATE FUNCTION bloom_empty(capacity pg_catalog.int8, error_rate pg_catalog.float8 DEFAULT 0.01) RETURNS bloom
    AS 'MODULE_PATHNAME', 'bloom_empty' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_empty(pg_catalog.int8, pg_catalog.float8) IS 'an empty filter sized for capacity distinct keys at the given false-positive rate';

CREATE FUNCTION bloom_info(filter bloom,
    OUT capacity pg_catalog.int8, OUT error_rate pg_catalog.float8, OUT bits pg_catalog.int8,
    OUT hashes pg_catalog.int4, OUT bytes pg_catalog.int8, OUT inserted pg_catalog.int8,
    OUT bits_set pg_catalog.int8, OUT fill pg_catalog.float8, OUT estimated_count pg_catalog.float8,
    OUT estimated_error_rate pg_catalog.float8)
    AS 'MODULE_PATHNAME', 'bloom_info' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_info(bloom) IS 'parameters, size, fill and estimated count and false-positive rate of a filter';

CREATE FUNCTION bloom_union(bloom, bloom) RETURNS bloom
    AS 'MODULE_PATHNAME', 'bloom_union' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_union(bloom, bloom) IS 'a filter holding the keys of both; their capacity and error_rate must match';
CREATE OPERATOR | (LEFTARG = bloom, RIGHTARG = bloom, FUNCTION = bloom_union, COMMUTATOR = |);
COMMENT ON OPERATOR | (bloom, bloom) IS 'union of two bloom filters';

-- text keys
CREATE FUNCTION bloom_add(filter bloom, value pg_catalog.text) RETURNS bloom
    AS 'MODULE_PATHNAME', 'bloom_add_text' LANGUAGE C IMMUTABLE CALLED ON NULL INPUT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_add(bloom, pg_catalog.text) IS 'a copy of the filter with the value added; a NULL value leaves the filter unchanged';
CREATE FUNCTION bloom_add(filter bloom, items pg_catalog.text[]) RETURNS bloom
    AS 'MODULE_PATHNAME', 'bloom_add_array' LANGUAGE C IMMUTABLE CALLED ON NULL INPUT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_add(bloom, pg_catalog.text[]) IS 'a copy of the filter with every non-NULL element added';
CREATE FUNCTION bloom_contains(filter bloom, value pg_catalog.text) RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_contains_text' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_contains(bloom, pg_catalog.text) IS 'false: the value was certainly never added; true: it probably was';
CREATE FUNCTION bloom_contains(filter bloom, items pg_catalog.text[]) RETURNS pg_catalog.bool[]
    AS 'MODULE_PATHNAME', 'bloom_contains_array' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_contains(bloom, pg_catalog.text[]) IS 'bloom_contains for each element, NULL for a NULL element';
CREATE FUNCTION bloom_shard(value pg_catalog.text, shards pg_catalog.int4) RETURNS pg_catalog.int4
    AS 'MODULE_PATHNAME', 'bloom_shard_text' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_shard(pg_catalog.text, pg_catalog.int4) IS 'a stable shard number in [0, shards), from hash bits independent of the filter''s';

CREATE FUNCTION bloom_agg_transfn(pg_catalog.internal, pg_catalog.text) RETURNS pg_catalog.internal
    AS 'MODULE_PATHNAME', 'bloom_agg_transfn' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION bloom_agg_transfn(pg_catalog.internal, pg_catalog.text) IS 'transition function of bloom_agg(value)';
CREATE FUNCTION bloom_agg_transfn(pg_catalog.internal, pg_catalog.text, pg_catalog.float8) RETURNS pg_catalog.internal
    AS 'MODULE_PATHNAME', 'bloom_agg_rate_transfn' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION bloom_agg_transfn(pg_catalog.internal, pg_catalog.text, pg_catalog.float8) IS 'transition function of bloom_agg(value, error_rate)';
CREATE FUNCTION bloom_agg_transfn(pg_catalog.internal, pg_catalog.text, pg_catalog.int8, pg_catalog.float8) RETURNS pg_catalog.internal
    AS 'MODULE_PATHNAME', 'bloom_agg_sized_transfn' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION bloom_agg_transfn(pg_catalog.internal, pg_catalog.text, pg_catalog.int8, pg_catalog.float8) IS 'transition function of bloom_agg(value, capacity, error_rate)';

CREATE FUNCTION bloom_agg_finalfn(pg_catalog.internal) RETURNS bloom
    AS 'MODULE_PATHNAME', 'bloom_agg_finalfn' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION bloom_agg_finalfn(pg_catalog.internal) IS 'final function of bloom_agg and bloom_union_agg';
CREATE FUNCTION bloom_agg_combinefn(pg_catalog.internal, pg_catalog.internal) RETURNS pg_catalog.internal
    AS 'MODULE_PATHNAME', 'bloom_agg_combinefn' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION bloom_agg_combinefn(pg_catalog.internal, pg_catalog.internal) IS 'combine function of bloom_agg and bloom_union_agg';
CREATE FUNCTION bloom_agg_serialfn(pg_catalog.internal) RETURNS pg_catalog.bytea
    AS 'MODULE_PATHNAME', 'bloom_agg_serialfn' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_agg_serialfn(pg_catalog.internal) IS 'serialize function of bloom_agg and bloom_union_agg';
CREATE FUNCTION bloom_agg_deserialfn(pg_catalog.bytea, pg_catalog.internal) RETURNS pg_catalog.internal
    AS 'MODULE_PATHNAME', 'bloom_agg_deserialfn' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_agg_deserialfn(pg_catalog.bytea, pg_catalog.internal) IS 'deserialize function of bloom_agg and bloom_union_agg';
CREATE AGGREGATE bloom_agg(pg_catalog.text) (
    SFUNC = bloom_agg_transfn, STYPE = pg_catalog.internal,
    FINALFUNC = bloom_agg_finalfn, FINALFUNC_MODIFY = READ_ONLY,
    COMBINEFUNC = bloom_agg_combinefn, SERIALFUNC = bloom_agg_serialfn,
    DESERIALFUNC = bloom_agg_deserialfn, PARALLEL = SAFE
);
COMMENT ON AGGREGATE bloom_agg(pg_catalog.text) IS 'a filter sized for the number of distinct non-NULL values, at error_rate 0.01';
CREATE AGGREGATE bloom_agg(pg_catalog.text, pg_catalog.float8) (
    SFUNC = bloom_agg_transfn, STYPE = pg_catalog.internal,
    FINALFUNC = bloom_agg_finalfn, FINALFUNC_MODIFY = READ_ONLY,
    COMBINEFUNC = bloom_agg_combinefn, SERIALFUNC = bloom_agg_serialfn,
    DESERIALFUNC = bloom_agg_deserialfn, PARALLEL = SAFE
);
COMMENT ON AGGREGATE bloom_agg(pg_catalog.text, pg_catalog.float8) IS 'a filter sized for the number of distinct non-NULL values, at the error_rate of the first row';
CREATE AGGREGATE bloom_agg(pg_catalog.text, pg_catalog.int8, pg_catalog.float8) (
    SFUNC = bloom_agg_transfn, STYPE = pg_catalog.internal,
    FINALFUNC = bloom_agg_finalfn, FINALFUNC_MODIFY = READ_ONLY,
    COMBINEFUNC = bloom_agg_combinefn, SERIALFUNC = bloom_agg_serialfn,
    DESERIALFUNC = bloom_agg_deserialfn, PARALLEL = SAFE
);
COMMENT ON AGGREGATE bloom_agg(pg_catalog.text, pg_catalog.int8, pg_catalog.float8) IS 'a filter of the capacity and error_rate of the first row, holding every non-NULL value';

-- bytea keys
CREATE FUNCTION bloom_add(filter bloom, value pg_catalog.bytea) RETURNS bloom
    AS 'MODULE_PATHNAME', 'bloom_add_bytea' LANGUAGE C IMMUTABLE CALLED ON NULL INPUT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_add(bloom, pg_catalog.bytea) IS 'a copy of the filter with the value added; a NULL value leaves the filter unchanged';
CREATE FUNCTION bloom_add(filter bloom, items pg_catalog.bytea[]) RETURNS bloom
    AS 'MODULE_PATHNAME', 'bloom_add_array' LANGUAGE C IMMUTABLE CALLED ON NULL INPUT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_add(bloom, pg_catalog.bytea[]) IS 'a copy of the filter with every non-NULL element added';
CREATE FUNCTION bloom_contains(filter bloom, value pg_catalog.bytea) RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_contains_bytea' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_contains(bloom, pg_catalog.bytea) IS 'false: the value was certainly never added; true: it probably was';
CREATE FUNCTION bloom_contains(filter bloom, items pg_catalog.bytea[]) RETURNS pg_catalog.bool[]
    AS 'MODULE_PATHNAME', 'bloom_contains_array' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_contains(bloom, pg_catalog.bytea[]) IS 'bloom_contains for each element, NULL for a NULL element';
CREATE FUNCTION bloom_shard(value pg_catalog.bytea, shards pg_catalog.int4) RETURNS pg_catalog.int4
    AS 'MODULE_PATHNAME', 'bloom_shard_bytea' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_shard(pg_catalog.bytea, pg_catalog.int4) IS 'a stable shard number in [0, shards), from hash bits independent of the filter''s';

CREATE FUNCTION bloom_agg_transfn(pg_catalog.internal, pg_catalog.bytea) RETURNS pg_catalog.internal
    AS 'MODULE_PATHNAME', 'bloom_agg_transfn' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION bloom_agg_transfn(pg_catalog.internal, pg_catalog.bytea) IS 'transition function of bloom_agg(value)';
CREATE FUNCTION bloom_agg_transfn(pg_catalog.internal, pg_catalog.bytea, pg_catalog.float8) RETURNS pg_catalog.internal
    AS 'MODULE_PATHNAME', 'bloom_agg_rate_transfn' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION bloom_agg_transfn(pg_catalog.internal, pg_catalog.bytea, pg_catalog.float8) IS 'transition function of bloom_agg(value, error_rate)';
CREATE FUNCTION bloom_agg_transfn(pg_catalog.internal, pg_catalog.bytea, pg_catalog.int8, pg_catalog.float8) RETURNS pg_catalog.internal
    AS 'MODULE_PATHNAME', 'bloom_agg_sized_transfn' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION bloom_agg_transfn(pg_catalog.internal, pg_catalog.bytea, pg_catalog.int8, pg_catalog.float8) IS 'transition function of bloom_agg(value, capacity, error_rate)';
CREATE AGGREGATE bloom_agg(pg_catalog.bytea) (
    SFUNC = bloom_agg_transfn, STYPE = pg_catalog.internal,
    FINALFUNC = bloom_agg_finalfn, FINALFUNC_MODIFY = READ_ONLY,
    COMBINEFUNC = bloom_agg_combinefn, SERIALFUNC = bloom_agg_serialfn,
    DESERIALFUNC = bloom_agg_deserialfn, PARALLEL = SAFE
);
COMMENT ON AGGREGATE bloom_agg(pg_catalog.bytea) IS 'a filter sized for the number of distinct non-NULL values, at error_rate 0.01';
CREATE AGGREGATE bloom_agg(pg_catalog.bytea, pg_catalog.float8) (
    SFUNC = bloom_agg_transfn, STYPE = pg_catalog.internal,
    FINALFUNC = bloom_agg_finalfn, FINALFUNC_MODIFY = READ_ONLY,
    COMBINEFUNC = bloom_agg_combinefn, SERIALFUNC = bloom_agg_serialfn,
    DESERIALFUNC = bloom_agg_deserialfn, PARALLEL = SAFE
);
COMMENT ON AGGREGATE bloom_agg(pg_catalog.bytea, pg_catalog.float8) IS 'a filter sized for the number of distinct non-NULL values, at the error_rate of the first row';
CREATE AGGREGATE bloom_agg(pg_catalog.bytea, pg_catalog.int8, pg_catalog.float8) (
    SFUNC = bloom_agg_transfn, STYPE = pg_catalog.internal,
    FINALFUNC = bloom_agg_finalfn, FINALFUNC_MODIFY = READ_ONLY,
    COMBINEFUNC = bloom_agg_combinefn, SERIALFUNC = bloom_agg_serialfn,
    DESERIALFUNC = bloom_agg_deserialfn, PARALLEL = SAFE
);
COMMENT ON AGGREGATE bloom_agg(pg_catalog.bytea, pg_catalog.int8, pg_catalog.float8) IS 'a filter of the capacity and error_rate of the first row, holding every non-NULL value';

-- bigint keys
CREATE FUNCTION bloom_add(filter bloom, value pg_catalog.int8) RETURNS bloom
    AS 'MODULE_PATHNAME', 'bloom_add_int8' LANGUAGE C IMMUTABLE CALLED ON NULL INPUT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_add(bloom, pg_catalog.int8) IS 'a copy of the filter with the value added; a NULL value leaves the filter unchanged';
CREATE FUNCTION bloom_add(filter bloom, items pg_catalog.int8[]) RETURNS bloom
    AS 'MODULE_PATHNAME', 'bloom_add_array' LANGUAGE C IMMUTABLE CALLED ON NULL INPUT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_add(bloom, pg_catalog.int8[]) IS 'a copy of the filter with every non-NULL element added';
CREATE FUNCTION bloom_contains(filter bloom, value pg_catalog.int8) RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_contains_int8' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_contains(bloom, pg_catalog.int8) IS 'false: the value was certainly never added; true: it probably was';
CREATE FUNCTION bloom_contains(filter bloom, items pg_catalog.int8[]) RETURNS pg_catalog.bool[]
    AS 'MODULE_PATHNAME', 'bloom_contains_array' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_contains(bloom, pg_catalog.int8[]) IS 'bloom_contains for each element, NULL for a NULL element';
CREATE FUNCTION bloom_shard(value pg_catalog.int8, shards pg_catalog.int4) RETURNS pg_catalog.int4
    AS 'MODULE_PATHNAME', 'bloom_shard_int8' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_shard(pg_catalog.int8, pg_catalog.int4) IS 'a stable shard number in [0, shards), from hash bits independent of the filter''s';

CREATE FUNCTION bloom_agg_transfn(pg_catalog.internal, pg_catalog.int8) RETURNS pg_catalog.internal
    AS 'MODULE_PATHNAME', 'bloom_agg_transfn' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION bloom_agg_transfn(pg_catalog.internal, pg_catalog.int8) IS 'transition function of bloom_agg(value)';
CREATE FUNCTION bloom_agg_transfn(pg_catalog.internal, pg_catalog.int8, pg_catalog.float8) RETURNS pg_catalog.internal
    AS 'MODULE_PATHNAME', 'bloom_agg_rate_transfn' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION bloom_agg_transfn(pg_catalog.internal, pg_catalog.int8, pg_catalog.float8) IS 'transition function of bloom_agg(value, error_rate)';
CREATE FUNCTION bloom_agg_transfn(pg_catalog.internal, pg_catalog.int8, pg_catalog.int8, pg_catalog.float8) RETURNS pg_catalog.internal
    AS 'MODULE_PATHNAME', 'bloom_agg_sized_transfn' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION bloom_agg_transfn(pg_catalog.internal, pg_catalog.int8, pg_catalog.int8, pg_catalog.float8) IS 'transition function of bloom_agg(value, capacity, error_rate)';
CREATE AGGREGATE bloom_agg(pg_catalog.int8) (
    SFUNC = bloom_agg_transfn, STYPE = pg_catalog.internal,
    FINALFUNC = bloom_agg_finalfn, FINALFUNC_MODIFY = READ_ONLY,
    COMBINEFUNC = bloom_agg_combinefn, SERIALFUNC = bloom_agg_serialfn,
    DESERIALFUNC = bloom_agg_deserialfn, PARALLEL = SAFE
);
COMMENT ON AGGREGATE bloom_agg(pg_catalog.int8) IS 'a filter sized for the number of distinct non-NULL values, at error_rate 0.01';
CREATE AGGREGATE bloom_agg(pg_catalog.int8, pg_catalog.float8) (
    SFUNC = bloom_agg_transfn, STYPE = pg_catalog.internal,
    FINALFUNC = bloom_agg_finalfn, FINALFUNC_MODIFY = READ_ONLY,
    COMBINEFUNC = bloom_agg_combinefn, SERIALFUNC = bloom_agg_serialfn,
    DESERIALFUNC = bloom_agg_deserialfn, PARALLEL = SAFE
);
COMMENT ON AGGREGATE bloom_agg(pg_catalog.int8, pg_catalog.float8) IS 'a filter sized for the number of distinct non-NULL values, at the error_rate of the first row';
CREATE AGGREGATE bloom_agg(pg_catalog.int8, pg_catalog.int8, pg_catalog.float8) (
    SFUNC = bloom_agg_transfn, STYPE = pg_catalog.internal,
    FINALFUNC = bloom_agg_finalfn, FINALFUNC_MODIFY = READ_ONLY,
    COMBINEFUNC = bloom_agg_combinefn, SERIALFUNC = bloom_agg_serialfn,
    DESERIALFUNC = bloom_agg_deserialfn, PARALLEL = SAFE
);
COMMENT ON AGGREGATE bloom_agg(pg_catalog.int8, pg_catalog.int8, pg_catalog.float8) IS 'a filter of the capacity and error_rate of the first row, holding every non-NULL value';

-- uuid keys
CREATE FUNCTION bloom_add(filter bloom, value pg_catalog.uuid) RETURNS bloom
    AS 'MODULE_PATHNAME', 'bloom_add_uuid' LANGUAGE C IMMUTABLE CALLED ON NULL INPUT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_add(bloom, pg_catalog.uuid) IS 'a copy of the filter with the value added; a NULL value leaves the filter unchanged';
CREATE FUNCTION bloom_add(filter bloom, items pg_catalog.uuid[]) RETURNS bloom
    AS 'MODULE_PATHNAME', 'bloom_add_array' LANGUAGE C IMMUTABLE CALLED ON NULL INPUT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_add(bloom, pg_catalog.uuid[]) IS 'a copy of the filter with every non-NULL element added';
CREATE FUNCTION bloom_contains(filter bloom, value pg_catalog.uuid) RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_contains_uuid' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_contains(bloom, pg_catalog.uuid) IS 'false: the value was certainly never added; true: it probably was';
CREATE FUNCTION bloom_contains(filter bloom, items pg_catalog.uuid[]) RETURNS pg_catalog.bool[]
    AS 'MODULE_PATHNAME', 'bloom_contains_array' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_contains(bloom, pg_catalog.uuid[]) IS 'bloom_contains for each element, NULL for a NULL element';
CREATE FUNCTION bloom_shard(value pg_catalog.uuid, shards pg_catalog.int4) RETURNS pg_catalog.int4
    AS 'MODULE_PATHNAME', 'bloom_shard_uuid' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_shard(pg_catalog.uuid, pg_catalog.int4) IS 'a stable shard number in [0, shards), from hash bits independent of the filter''s';

CREATE FUNCTION bloom_agg_transfn(pg_catalog.internal, pg_catalog.uuid) RETURNS pg_catalog.internal
    AS 'MODULE_PATHNAME', 'bloom_agg_transfn' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION bloom_agg_transfn(pg_catalog.internal, pg_catalog.uuid) IS 'transition function of bloom_agg(value)';
CREATE FUNCTION bloom_agg_transfn(pg_catalog.internal, pg_catalog.uuid, pg_catalog.float8) RETURNS pg_catalog.internal
    AS 'MODULE_PATHNAME', 'bloom_agg_rate_transfn' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION bloom_agg_transfn(pg_catalog.internal, pg_catalog.uuid, pg_catalog.float8) IS 'transition function of bloom_agg(value, error_rate)';
CREATE FUNCTION bloom_agg_transfn(pg_catalog.internal, pg_catalog.uuid, pg_catalog.int8, pg_catalog.float8) RETURNS pg_catalog.internal
    AS 'MODULE_PATHNAME', 'bloom_agg_sized_transfn' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION bloom_agg_transfn(pg_catalog.internal, pg_catalog.uuid, pg_catalog.int8, pg_catalog.float8) IS 'transition function of bloom_agg(value, capacity, error_rate)';
CREATE AGGREGATE bloom_agg(pg_catalog.uuid) (
    SFUNC = bloom_agg_transfn, STYPE = pg_catalog.internal,
    FINALFUNC = bloom_agg_finalfn, FINALFUNC_MODIFY = READ_ONLY,
    COMBINEFUNC = bloom_agg_combinefn, SERIALFUNC = bloom_agg_serialfn,
    DESERIALFUNC = bloom_agg_deserialfn, PARALLEL = SAFE
);
COMMENT ON AGGREGATE bloom_agg(pg_catalog.uuid) IS 'a filter sized for the number of distinct non-NULL values, at error_rate 0.01';
CREATE AGGREGATE bloom_agg(pg_catalog.uuid, pg_catalog.float8) (
    SFUNC = bloom_agg_transfn, STYPE = pg_catalog.internal,
    FINALFUNC = bloom_agg_finalfn, FINALFUNC_MODIFY = READ_ONLY,
    COMBINEFUNC = bloom_agg_combinefn, SERIALFUNC = bloom_agg_serialfn,
    DESERIALFUNC = bloom_agg_deserialfn, PARALLEL = SAFE
);
COMMENT ON AGGREGATE bloom_agg(pg_catalog.uuid, pg_catalog.float8) IS 'a filter sized for the number of distinct non-NULL values, at the error_rate of the first row';
CREATE AGGREGATE bloom_agg(pg_catalog.uuid, pg_catalog.int8, pg_catalog.float8) (
    SFUNC = bloom_agg_transfn, STYPE = pg_catalog.internal,
    FINALFUNC = bloom_agg_finalfn, FINALFUNC_MODIFY = READ_ONLY,
    COMBINEFUNC = bloom_agg_combinefn, SERIALFUNC = bloom_agg_serialfn,
    DESERIALFUNC = bloom_agg_deserialfn, PARALLEL = SAFE
);
COMMENT ON AGGREGATE bloom_agg(pg_catalog.uuid, pg_catalog.int8, pg_catalog.float8) IS 'a filter of the capacity and error_rate of the first row, holding every non-NULL value';

CREATE FUNCTION bloom_union_agg_transfn(pg_catalog.internal, bloom) RETURNS pg_catalog.internal
    AS 'MODULE_PATHNAME', 'bloom_union_agg_transfn' LANGUAGE C IMMUTABLE PARALLEL SAFE;
COMMENT ON FUNCTION bloom_union_agg_transfn(pg_catalog.internal, bloom) IS 'transition function of bloom_union_agg';
CREATE AGGREGATE bloom_union_agg(bloom) (
    SFUNC = bloom_union_agg_transfn, STYPE = pg_catalog.internal,
    FINALFUNC = bloom_agg_finalfn, FINALFUNC_MODIFY = READ_ONLY,
    COMBINEFUNC = bloom_agg_combinefn, SERIALFUNC = bloom_agg_serialfn,
    DESERIALFUNC = bloom_agg_deserialfn, PARALLEL = SAFE
);
COMMENT ON AGGREGATE bloom_union_agg(bloom) IS 'the union of all non-NULL filters; their capacity and error_rate must match';

CREATE FUNCTION bloom_eq(bloom, bloom) RETURNS pg_catalog.bool
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
    RETURN $1::pg_catalog.bytea OPERATOR(pg_catalog.=) $2::pg_catalog.bytea;
COMMENT ON FUNCTION bloom_eq(bloom, bloom) IS 'true when two filters are byte-identical';
CREATE OPERATOR = (LEFTARG = bloom, RIGHTARG = bloom, FUNCTION = bloom_eq, COMMUTATOR = =);
COMMENT ON OPERATOR = (bloom, bloom) IS 'byte-identical filters';

-- The bloomfilter index access method: a filter that PostgreSQL keeps current itself.

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

-- How this server process checks a filter's bits, chosen when the library loads.
CREATE FUNCTION bloom_check_path() RETURNS pg_catalog.text
    AS 'MODULE_PATHNAME', 'bloom_check_path' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION bloom_check_path() IS 'the way this server process checks a filter''s bits: scalar, avx2 or avx512, the fastest of those the CPU has, timed when the library loaded';
