-- bloomfilter 1.3: the bloom type, its functions and aggregates, and maintained filters.
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

-- Maintained filters (see README, "Maintained filters" and "Privileges"): sharded filters kept in
-- step with a table's column.

-- One row per maintained filter.
CREATE TABLE bloom_filters (
    name pg_catalog.text PRIMARY KEY,
    relation pg_catalog.regclass NOT NULL,
    column_name pg_catalog.name NOT NULL,
    key_type pg_catalog.regtype NOT NULL,
    capacity pg_catalog.int8 NOT NULL,
    error_rate pg_catalog.float8 NOT NULL,
    shards pg_catalog.int4 NOT NULL,
    shard_capacity pg_catalog.int8 NOT NULL
);
COMMENT ON TABLE bloom_filters IS 'maintained bloom filters: which column of which table each one follows, and its sizing';

-- One row per shard of a maintained filter; an add rewrites only its shard. Default shards are
-- under 2 KB, so they stay inside their row and no compression is ever tried (the type's STORAGE
-- external); larger ones go out of line uncompressed and are read in slices.
CREATE TABLE bloom_filter_shards (
    -- No foreign key to bloom_filters: a parallel pg_restore loads the two tables' rows at the
    -- same time, and would reject shards whose filter row is not loaded yet.
    name pg_catalog.text NOT NULL,
    shard pg_catalog.int4 NOT NULL,
    f bloom NOT NULL,
    PRIMARY KEY (name, shard)
);
COMMENT ON TABLE bloom_filter_shards IS 'the shard filters of maintained bloom filters';

-- pg_dump dumps their rows, so maintained filters survive dump and restore.
SELECT pg_catalog.pg_extension_config_dump('bloom_filters', '');
SELECT pg_catalog.pg_extension_config_dump('bloom_filter_shards', '');

-- Every operator qualified, so none resolves to one planted in the extension's schema.
ALTER TABLE bloom_filters
  ADD CONSTRAINT bloom_filters_capacity_check CHECK (capacity OPERATOR(pg_catalog.>=) 1::pg_catalog.int8),
  ADD CONSTRAINT bloom_filters_error_rate_check
    CHECK (error_rate OPERATOR(pg_catalog.>) 0::pg_catalog.float8 AND error_rate OPERATOR(pg_catalog.<) 1::pg_catalog.float8),
  ADD CONSTRAINT bloom_filters_shards_check CHECK (shards OPERATOR(pg_catalog.>=) 1::pg_catalog.int4),
  ADD CONSTRAINT bloom_filters_shard_capacity_check CHECK (shard_capacity OPERATOR(pg_catalog.>=) 1::pg_catalog.int8);

-- Whether the current role has the rights of the owner of a table (false or NULL when not, or
-- when the table no longer exists).
CREATE FUNCTION bloom_filter_owned(relation pg_catalog.regclass) RETURNS pg_catalog.bool
LANGUAGE sql STABLE STRICT PARALLEL SAFE
RETURN pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c
                               WHERE c.oid OPERATOR(pg_catalog.=) relation::pg_catalog.oid),
                              'USAGE'::pg_catalog.text);
COMMENT ON FUNCTION bloom_filter_owned(pg_catalog.regclass) IS 'whether the current role owns (or is a member of the owner of) a table';

-- The key type a column of the given type is hashed as: text-like columns as text, integers as
-- bigint. Exact built-in types only: no domain or custom type (whose casts would be user code).
CREATE FUNCTION bloom_filter_key_type(column_type pg_catalog.regtype) RETURNS pg_catalog.regtype
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  type_oid pg_catalog.oid := column_type::pg_catalog.oid;
BEGIN
  IF type_oid OPERATOR(pg_catalog.=) 'pg_catalog.text'::pg_catalog.regtype::pg_catalog.oid
     OR type_oid OPERATOR(pg_catalog.=) 'pg_catalog.varchar'::pg_catalog.regtype::pg_catalog.oid THEN
    RETURN 'pg_catalog.text'::pg_catalog.regtype;
  ELSIF type_oid OPERATOR(pg_catalog.=) 'pg_catalog.int2'::pg_catalog.regtype::pg_catalog.oid
     OR type_oid OPERATOR(pg_catalog.=) 'pg_catalog.int4'::pg_catalog.regtype::pg_catalog.oid
     OR type_oid OPERATOR(pg_catalog.=) 'pg_catalog.int8'::pg_catalog.regtype::pg_catalog.oid THEN
    RETURN 'pg_catalog.int8'::pg_catalog.regtype;
  ELSIF type_oid OPERATOR(pg_catalog.=) 'pg_catalog.bytea'::pg_catalog.regtype::pg_catalog.oid
     OR type_oid OPERATOR(pg_catalog.=) 'pg_catalog.uuid'::pg_catalog.regtype::pg_catalog.oid THEN
    RETURN column_type;
  END IF;
  RAISE EXCEPTION 'bloom filters can follow text, varchar, bytea, smallint, integer, bigint or uuid columns, not %', column_type
    USING ERRCODE = 'datatype_mismatch';
END $$;
COMMENT ON FUNCTION bloom_filter_key_type(pg_catalog.regtype) IS 'the key type a column of the given type is hashed as';

-- Shards hold a binomial share of the keys: size each for its mean plus four standard deviations.
CREATE FUNCTION bloom_filter_shard_capacity(capacity pg_catalog.int8, shards pg_catalog.int4) RETURNS pg_catalog.int8
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN pg_catalog.ceil(
  (capacity::pg_catalog.float8 OPERATOR(pg_catalog./) shards::pg_catalog.float8)
  OPERATOR(pg_catalog.+)
  (4::pg_catalog.float8 OPERATOR(pg_catalog.*) pg_catalog.sqrt(
     (capacity::pg_catalog.float8 OPERATOR(pg_catalog./) shards::pg_catalog.float8)
     OPERATOR(pg_catalog.*)
     (1::pg_catalog.float8 OPERATOR(pg_catalog.-) (1::pg_catalog.float8 OPERATOR(pg_catalog./) shards::pg_catalog.float8))))
)::pg_catalog.int8;
COMMENT ON FUNCTION bloom_filter_shard_capacity(pg_catalog.int8, pg_catalog.int4) IS 'the capacity of each shard of a maintained filter';

-- The default shard count: the smallest power of two whose shards stay under 2000 bytes, inside
-- their row (PostgreSQL moves values out of line above about 2 KB).
CREATE FUNCTION bloom_filter_default_shards(capacity pg_catalog.int8, error_rate pg_catalog.float8) RETURNS pg_catalog.int4
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  shards pg_catalog.int4 := 1;
BEGIN
  WHILE shards OPERATOR(pg_catalog.<) 65536
        AND (SELECT i.bytes FROM @extschema@.bloom_info(@extschema@.bloom_empty(
               @extschema@.bloom_filter_shard_capacity(capacity, shards), error_rate)) AS i)
            OPERATOR(pg_catalog.>) 2000::pg_catalog.int8 LOOP
    shards := shards OPERATOR(pg_catalog.*) 2;
  END LOOP;
  RETURN shards;
END $$;
COMMENT ON FUNCTION bloom_filter_default_shards(pg_catalog.int8, pg_catalog.float8) IS 'the default shard count of a maintained filter: shards under 2000 bytes';

-- The one trigger function of every maintained filter (the filter's name is its argument). It
-- runs as whoever writes the row, checks that it fires on the filter's own table, reads the key
-- from the row in C, and adds it to its shard as the owner of the extension's tables.
CREATE FUNCTION bloom_filter_maintain() RETURNS trigger
AS 'MODULE_PATHNAME', 'bloom_filter_maintain' LANGUAGE C;
COMMENT ON FUNCTION bloom_filter_maintain() IS 'trigger of maintained bloom filters: adds the new value of the column to its shard';

-- The only writers of bloom_filters and bloom_filter_shards (see src/pg/maintained.cpp); each
-- checks the calling role's rights on the filter's table first.
CREATE FUNCTION bloom_filter_store(filter_name text, relation pg_catalog.regclass,
    column_name pg_catalog.name, capacity pg_catalog.int8, error_rate pg_catalog.float8,
    shards pg_catalog.int4, shard_capacity pg_catalog.int8, filters @extschema@.bloom[], replace pg_catalog.bool)
RETURNS void AS 'MODULE_PATHNAME', 'bloom_filter_store' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION bloom_filter_store(text, pg_catalog.regclass, pg_catalog.name, pg_catalog.int8, pg_catalog.float8, pg_catalog.int4, pg_catalog.int8, @extschema@.bloom[], pg_catalog.bool)
  IS 'writes the configuration and shards of a maintained filter of a table the caller owns';
CREATE FUNCTION bloom_filter_forget(filter_name text) RETURNS void
AS 'MODULE_PATHNAME', 'bloom_filter_forget' LANGUAGE C STRICT VOLATILE;
COMMENT ON FUNCTION bloom_filter_forget(text)
  IS 'deletes the configuration and shards of a maintained filter of a table the caller owns, or of a dropped table';
CREATE FUNCTION bloom_filter_forget_dropped() RETURNS void
AS 'MODULE_PATHNAME', 'bloom_filter_forget_dropped' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION bloom_filter_forget_dropped()
  IS 'deletes the configuration and shards of maintained filters whose table no longer exists';

-- The shards of a filter built from the table's rows, as the calling role (which holds a SHARE
-- lock on the table).
CREATE FUNCTION bloom_filter_build(relation pg_catalog.regclass, column_name pg_catalog.name,
    key_type pg_catalog.regtype, shards pg_catalog.int4, shard_capacity pg_catalog.int8,
    error_rate pg_catalog.float8)
RETURNS @extschema@.bloom[] LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  filters @extschema@.bloom[];
BEGIN
  -- key_type is one of text, int8, bytea and uuid (bloom_filter_key_type), the column's type
  -- a built-in type that casts to it.
  EXECUTE pg_catalog.format($q$
    SELECT pg_catalog.array_agg(COALESCE(built.f, @extschema@.bloom_empty($2, $3)) ORDER BY s)
    FROM pg_catalog.generate_series(0, $1 OPERATOR(pg_catalog.-) 1) AS s
    LEFT JOIN (SELECT @extschema@.bloom_shard(%1$I::%2$s, $1) AS shard,
                      @extschema@.bloom_agg(%1$I::%2$s, $2, $3) AS f
               FROM %3$s WHERE %1$I IS NOT NULL GROUP BY 1) AS built
      ON built.shard OPERATOR(pg_catalog.=) s $q$,
    column_name, @extschema@.bloom_filter_key_type(key_type), relation)
  INTO filters USING shards, shard_capacity, error_rate;
  RETURN filters;
END $$;
COMMENT ON FUNCTION bloom_filter_build(pg_catalog.regclass, pg_catalog.name, pg_catalog.regtype, pg_catalog.int4, pg_catalog.int8, pg_catalog.float8)
  IS 'the shards of a maintained filter, built from its table';

-- Drops a filter's triggers: those on its table calling bloom_filter_maintain with its name
-- (found by function and argument, so any name works, whatever its length or characters).
CREATE FUNCTION bloom_filter_drop_triggers(filter_name text, relation pg_catalog.regclass) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  trigger_name pg_catalog.name;
BEGIN
  FOR trigger_name IN
    SELECT t.tgname FROM pg_catalog.pg_trigger t
    WHERE t.tgrelid OPERATOR(pg_catalog.=) relation::pg_catalog.oid
      AND t.tgparentid OPERATOR(pg_catalog.=) 0::pg_catalog.oid
      AND t.tgfoid OPERATOR(pg_catalog.=) '@extschema@.bloom_filter_maintain()'::pg_catalog.regprocedure::pg_catalog.oid
      AND t.tgnargs OPERATOR(pg_catalog.=) 1::pg_catalog.int2
      AND t.tgargs OPERATOR(pg_catalog.=) (pg_catalog.convert_to(filter_name, pg_catalog.getdatabaseencoding())
                                           OPERATOR(pg_catalog.||) pg_catalog.decode('00', 'hex'))
  LOOP
    EXECUTE pg_catalog.format('DROP TRIGGER %I ON %s', trigger_name, relation);
  END LOOP;
END $$;
COMMENT ON FUNCTION bloom_filter_drop_triggers(text, pg_catalog.regclass) IS 'drops the triggers of a maintained filter';

-- (Re)creates the triggers that add new and changed values of the column. Trigger names are
-- derived from an MD5 of the filter's name, so they fit in 63 bytes whatever the name.
CREATE FUNCTION bloom_filter_install_triggers(filter_name text, relation pg_catalog.regclass,
    column_name pg_catalog.name) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  prefix text := 'bloom_filter_' OPERATOR(pg_catalog.||) pg_catalog.md5(filter_name);
BEGIN
  PERFORM @extschema@.bloom_filter_drop_triggers(filter_name, relation);
  EXECUTE pg_catalog.format(
    'CREATE TRIGGER %I AFTER INSERT ON %s FOR EACH ROW EXECUTE FUNCTION %s(%L)',
    prefix OPERATOR(pg_catalog.||) '_insert', relation, '@extschema@.bloom_filter_maintain', filter_name);
  EXECUTE pg_catalog.format(
    'CREATE TRIGGER %I AFTER UPDATE OF %I ON %s FOR EACH ROW EXECUTE FUNCTION %s(%L)',
    prefix OPERATOR(pg_catalog.||) '_update', column_name, relation, '@extschema@.bloom_filter_maintain', filter_name);
END $$;
COMMENT ON FUNCTION bloom_filter_install_triggers(text, pg_catalog.regclass, pg_catalog.name) IS 'creates the triggers that keep a maintained filter current';

CREATE FUNCTION bloom_filter_create(name text, relation pg_catalog.regclass, column_name pg_catalog.name,
    capacity pg_catalog.int8, error_rate pg_catalog.float8 DEFAULT 0.01, shards pg_catalog.int4 DEFAULT NULL)
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  column_type pg_catalog.regtype;
  key_type pg_catalog.regtype;
  shard_count pg_catalog.int4;
  shard_capacity pg_catalog.int8;
BEGIN
  SELECT a.atttypid INTO column_type FROM pg_catalog.pg_attribute a
  WHERE a.attrelid OPERATOR(pg_catalog.=) relation::pg_catalog.oid
    AND a.attname OPERATOR(pg_catalog.=) column_name
    AND a.attnum OPERATOR(pg_catalog.>) 0::pg_catalog.int2 AND NOT a.attisdropped;
  IF column_type IS NULL THEN
    RAISE EXCEPTION 'column "%" of relation % does not exist', column_name, relation
      USING ERRCODE = 'undefined_column';
  END IF;
  key_type := @extschema@.bloom_filter_key_type(column_type);
  -- Reuses bloom_empty's checks (and messages) for capacity and error_rate.
  PERFORM @extschema@.bloom_empty(capacity, error_rate);
  IF shards IS NOT NULL AND shards OPERATOR(pg_catalog.<) 1 THEN
    RAISE EXCEPTION 'shards must be between 1 and 65536, got %', shards USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF NOT @extschema@.bloom_filter_owned(relation) THEN
    RAISE EXCEPTION 'must be owner of table %', relation USING ERRCODE = 'insufficient_privilege';
  END IF;
  shard_count := COALESCE(shards, @extschema@.bloom_filter_default_shards(capacity, error_rate));
  shard_capacity := @extschema@.bloom_filter_shard_capacity(capacity, shard_count);
  -- Writers wait until the filter and its triggers exist, so no row is missed; readers do not.
  EXECUTE pg_catalog.format('LOCK TABLE %s IN SHARE MODE', relation);
  PERFORM @extschema@.bloom_filter_forget_dropped();
  PERFORM @extschema@.bloom_filter_store(name, relation, column_name, capacity, error_rate,
    shard_count, shard_capacity,
    @extschema@.bloom_filter_build(relation, column_name, key_type, shard_count, shard_capacity, error_rate),
    false);
  PERFORM @extschema@.bloom_filter_install_triggers(name, relation, column_name);
END $$;
COMMENT ON FUNCTION bloom_filter_create(text, pg_catalog.regclass, pg_catalog.name, pg_catalog.int8, pg_catalog.float8, pg_catalog.int4)
  IS 'creates a sharded filter over a column, built from the existing rows and kept current by triggers';

CREATE FUNCTION bloom_filter_rebuild(filter_name text, capacity pg_catalog.int8 DEFAULT NULL,
    error_rate pg_catalog.float8 DEFAULT NULL, shards pg_catalog.int4 DEFAULT NULL)
RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  cfg @extschema@.bloom_filters;
  new_capacity pg_catalog.int8;
  new_error_rate pg_catalog.float8;
  new_shards pg_catalog.int4;
  new_shard_capacity pg_catalog.int8;
BEGIN
  SELECT * INTO cfg FROM @extschema@.bloom_filters c WHERE c.name OPERATOR(pg_catalog.=) filter_name;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'bloom filter "%" does not exist', filter_name USING ERRCODE = 'undefined_object';
  END IF;
  new_capacity := COALESCE(capacity, cfg.capacity);
  new_error_rate := COALESCE(error_rate, cfg.error_rate);
  PERFORM @extschema@.bloom_empty(new_capacity, new_error_rate);
  new_shards := COALESCE(shards, CASE WHEN capacity IS NULL AND error_rate IS NULL THEN cfg.shards
                                      ELSE @extschema@.bloom_filter_default_shards(new_capacity, new_error_rate) END);
  IF new_shards OPERATOR(pg_catalog.<) 1 THEN
    RAISE EXCEPTION 'shards must be between 1 and 65536, got %', new_shards USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF NOT @extschema@.bloom_filter_owned(cfg.relation) THEN
    RAISE EXCEPTION 'must be owner of table %', cfg.relation USING ERRCODE = 'insufficient_privilege';
  END IF;
  new_shard_capacity := @extschema@.bloom_filter_shard_capacity(new_capacity, new_shards);
  -- SHARE: writers wait for the rebuild, readers keep reading the old shards until it commits.
  EXECUTE pg_catalog.format('LOCK TABLE %s IN SHARE MODE', cfg.relation);
  PERFORM @extschema@.bloom_filter_store(cfg.name, cfg.relation, cfg.column_name, new_capacity,
    new_error_rate, new_shards, new_shard_capacity,
    @extschema@.bloom_filter_build(cfg.relation, cfg.column_name, cfg.key_type, new_shards,
                                   new_shard_capacity, new_error_rate),
    true);
END $$;
COMMENT ON FUNCTION bloom_filter_rebuild(text, pg_catalog.int8, pg_catalog.float8, pg_catalog.int4)
  IS 'rebuilds a maintained filter from its table (after deletes, or with a new size) without blocking readers';

CREATE FUNCTION bloom_filter_drop(filter_name text) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  cfg @extschema@.bloom_filters;
BEGIN
  SELECT * INTO cfg FROM @extschema@.bloom_filters c WHERE c.name OPERATOR(pg_catalog.=) filter_name;
  IF FOUND THEN
    IF NOT @extschema@.bloom_filter_owned(cfg.relation) THEN
      RAISE EXCEPTION 'must be owner of table %', cfg.relation USING ERRCODE = 'insufficient_privilege';
    END IF;
    PERFORM @extschema@.bloom_filter_drop_triggers(cfg.name, cfg.relation);
  END IF;
  -- Also removes a filter whose table was dropped (invisible, so not FOUND above).
  PERFORM @extschema@.bloom_filter_forget(filter_name);
END $$;
COMMENT ON FUNCTION bloom_filter_drop(text) IS 'drops a maintained filter, its shards and its triggers';

CREATE FUNCTION bloom_filter_contains(filter_name text, value text) RETURNS pg_catalog.bool
LANGUAGE sql STABLE PARALLEL SAFE
RETURN (SELECT @extschema@.bloom_contains(s.f, value)
        FROM @extschema@.bloom_filters c JOIN @extschema@.bloom_filter_shards s ON s.name OPERATOR(pg_catalog.=) c.name
        WHERE c.name OPERATOR(pg_catalog.=) filter_name
          AND s.shard OPERATOR(pg_catalog.=) @extschema@.bloom_shard(value, c.shards));
CREATE FUNCTION bloom_filter_contains(filter_name text, value pg_catalog.bytea) RETURNS pg_catalog.bool
LANGUAGE sql STABLE PARALLEL SAFE
RETURN (SELECT @extschema@.bloom_contains(s.f, value)
        FROM @extschema@.bloom_filters c JOIN @extschema@.bloom_filter_shards s ON s.name OPERATOR(pg_catalog.=) c.name
        WHERE c.name OPERATOR(pg_catalog.=) filter_name
          AND s.shard OPERATOR(pg_catalog.=) @extschema@.bloom_shard(value, c.shards));
CREATE FUNCTION bloom_filter_contains(filter_name text, value pg_catalog.int8) RETURNS pg_catalog.bool
LANGUAGE sql STABLE PARALLEL SAFE
RETURN (SELECT @extschema@.bloom_contains(s.f, value)
        FROM @extschema@.bloom_filters c JOIN @extschema@.bloom_filter_shards s ON s.name OPERATOR(pg_catalog.=) c.name
        WHERE c.name OPERATOR(pg_catalog.=) filter_name
          AND s.shard OPERATOR(pg_catalog.=) @extschema@.bloom_shard(value, c.shards));
CREATE FUNCTION bloom_filter_contains(filter_name text, value pg_catalog.uuid) RETURNS pg_catalog.bool
LANGUAGE sql STABLE PARALLEL SAFE
RETURN (SELECT @extschema@.bloom_contains(s.f, value)
        FROM @extschema@.bloom_filters c JOIN @extschema@.bloom_filter_shards s ON s.name OPERATOR(pg_catalog.=) c.name
        WHERE c.name OPERATOR(pg_catalog.=) filter_name
          AND s.shard OPERATOR(pg_catalog.=) @extschema@.bloom_shard(value, c.shards));
COMMENT ON FUNCTION bloom_filter_contains(text, text) IS 'checks a value against a maintained filter: false means certainly absent from the table';
COMMENT ON FUNCTION bloom_filter_contains(text, pg_catalog.bytea) IS 'checks a value against a maintained filter: false means certainly absent from the table';
COMMENT ON FUNCTION bloom_filter_contains(text, pg_catalog.int8) IS 'checks a value against a maintained filter: false means certainly absent from the table';
COMMENT ON FUNCTION bloom_filter_contains(text, pg_catalog.uuid) IS 'checks a value against a maintained filter: false means certainly absent from the table';

CREATE FUNCTION bloom_filter_health(filter_name text,
    OUT name text, OUT relation pg_catalog.regclass, OUT column_name pg_catalog.name,
    OUT capacity pg_catalog.int8, OUT error_rate pg_catalog.float8, OUT shards pg_catalog.int4,
    OUT bytes pg_catalog.int8, OUT inserted pg_catalog.int8, OUT estimated_count pg_catalog.float8,
    OUT fill pg_catalog.float8, OUT max_shard_fill pg_catalog.float8,
    OUT estimated_error_rate pg_catalog.float8, OUT max_shard_error_rate pg_catalog.float8,
    OUT needs_rebuild pg_catalog.bool)
LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
  SELECT c.name, c.relation, c.column_name, c.capacity, c.error_rate, c.shards,
         pg_catalog.sum(i.bytes)::pg_catalog.int8, pg_catalog.sum(i.inserted)::pg_catalog.int8,
         pg_catalog.sum(i.estimated_count), pg_catalog.avg(i.fill), pg_catalog.max(i.fill),
         pg_catalog.avg(i.estimated_error_rate), pg_catalog.max(i.estimated_error_rate),
         -- Rebuild when a check is now noticeably more likely to be wrong than asked for, or the
         -- filter holds more keys than it was sized for.
         pg_catalog.avg(i.estimated_error_rate)
           OPERATOR(pg_catalog.>) (1.05::pg_catalog.float8 OPERATOR(pg_catalog.*) c.error_rate)
         OR pg_catalog.sum(i.estimated_count) OPERATOR(pg_catalog.>) c.capacity::pg_catalog.float8
  FROM @extschema@.bloom_filters c
       JOIN @extschema@.bloom_filter_shards s ON s.name OPERATOR(pg_catalog.=) c.name,
       LATERAL @extschema@.bloom_info(s.f) AS i
  WHERE c.name OPERATOR(pg_catalog.=) filter_name
  GROUP BY c.name, c.relation, c.column_name, c.capacity, c.error_rate, c.shards
$$;
COMMENT ON FUNCTION bloom_filter_health(text) IS 'size, fill and estimated error rate of a maintained filter against its target';

-- Forgets the filters of dropped tables as they are dropped. It never makes a DROP fail.
CREATE FUNCTION bloom_filter_sql_drop() RETURNS event_trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
  IF pg_catalog.to_regclass('@extschema@.bloom_filters') IS NOT NULL
     AND EXISTS (SELECT FROM pg_catalog.pg_event_trigger_dropped_objects() d
                 WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass::pg_catalog.oid
                   AND d.objsubid OPERATOR(pg_catalog.=) 0) THEN
    PERFORM @extschema@.bloom_filter_forget_dropped();
  END IF;
EXCEPTION WHEN OTHERS THEN
  RAISE WARNING 'bloomfilter: could not forget the filters of dropped tables: %', SQLERRM;
END $$;
COMMENT ON FUNCTION bloom_filter_sql_drop() IS 'event trigger: forgets the maintained filters of dropped tables';
CREATE EVENT TRIGGER bloom_filter_sql_drop ON sql_drop EXECUTE FUNCTION bloom_filter_sql_drop();

-- Row-level security: whoever may read a table's column may read its filter, the table's owner
-- (or a member of its role) too. PUBLIC may only read: every write goes through the functions
-- above, so no role can lock these tables beyond ACCESS SHARE or lock their rows. The policies
-- never raise (a filter whose column or table is gone is just invisible).
GRANT SELECT ON bloom_filters, bloom_filter_shards TO PUBLIC;
ALTER TABLE bloom_filters ENABLE ROW LEVEL SECURITY;
ALTER TABLE bloom_filter_shards ENABLE ROW LEVEL SECURITY;
CREATE POLICY bloom_filters_read ON bloom_filters FOR SELECT
  USING (EXISTS (SELECT FROM pg_catalog.pg_attribute a
                 WHERE a.attrelid OPERATOR(pg_catalog.=) relation::pg_catalog.oid
                   AND a.attname OPERATOR(pg_catalog.=) column_name
                   AND a.attnum OPERATOR(pg_catalog.>) 0::pg_catalog.int2 AND NOT a.attisdropped
                   AND pg_catalog.has_column_privilege(a.attrelid, a.attnum, 'SELECT'::pg_catalog.text)));
CREATE POLICY bloom_filters_owner ON bloom_filters FOR SELECT
  USING (@extschema@.bloom_filter_owned(relation));
CREATE POLICY bloom_filter_shards_read ON bloom_filter_shards FOR SELECT
  USING (EXISTS (SELECT FROM @extschema@.bloom_filters c
                 WHERE c.name OPERATOR(pg_catalog.=) bloom_filter_shards.name));
