-- bloomfilter 2.1 -> 2.2: checks that name the index by text, resolved at each call, and
-- bloom_index_contains_key, the check of an expression index's key as the index holds it.
\echo Use "ALTER EXTENSION bloomfilter UPDATE TO '2.2'" to load this file. \quit

-- The index by name: resolved when each call runs (its table and the index locked, other
-- sessions' catalog changes taken in), as a statement resolves a table's name, so that a
-- transaction open across REINDEX CONCURRENTLY reads the index that name means now. A quoted
-- literal, bloom_index_contains('users_email_bloom', $1), takes these; a regclass (an OID
-- resolved when the statement is parsed) the others.
CREATE FUNCTION bloom_index_contains(index pg_catalog.text, value pg_catalog.text) RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_named' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_index_contains(index pg_catalog.text, value pg_catalog.bytea) RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_named' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_index_contains(index pg_catalog.text, value pg_catalog.int8) RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_named' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_index_contains(index pg_catalog.text, value pg_catalog.uuid) RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_named' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_index_contains(pg_catalog.text, pg_catalog.text) IS 'false: no row of the named index''s table has this key; true: one probably has';
COMMENT ON FUNCTION bloom_index_contains(pg_catalog.text, pg_catalog.bytea) IS 'false: no row of the named index''s table has this key; true: one probably has';
COMMENT ON FUNCTION bloom_index_contains(pg_catalog.text, pg_catalog.int8) IS 'false: no row of the named index''s table has this key; true: one probably has';
COMMENT ON FUNCTION bloom_index_contains(pg_catalog.text, pg_catalog.uuid) IS 'false: no row of the named index''s table has this key; true: one probably has';

-- The key as the index holds it: for an expression index, the expression's value, which the
-- caller computed (the expression is not evaluated). For a plain index, the same as
-- bloom_index_contains.
CREATE FUNCTION bloom_index_contains_key(index pg_catalog.text, key pg_catalog.text) RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_key_named' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_index_contains_key(index pg_catalog.text, key pg_catalog.bytea) RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_key_named' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_index_contains_key(index pg_catalog.text, key pg_catalog.int8) RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_key_named' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_index_contains_key(index pg_catalog.text, key pg_catalog.uuid) RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_key_named' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_index_contains_key(index pg_catalog.regclass, key pg_catalog.text) RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_key' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_index_contains_key(index pg_catalog.regclass, key pg_catalog.bytea) RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_key' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_index_contains_key(index pg_catalog.regclass, key pg_catalog.int8) RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_key' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_index_contains_key(index pg_catalog.regclass, key pg_catalog.uuid) RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_key' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_index_contains_key(pg_catalog.text, pg_catalog.text) IS 'false: no row of the named index''s table has this key (the value of the index''s expression); true: one probably has';
COMMENT ON FUNCTION bloom_index_contains_key(pg_catalog.text, pg_catalog.bytea) IS 'false: no row of the named index''s table has this key (the value of the index''s expression); true: one probably has';
COMMENT ON FUNCTION bloom_index_contains_key(pg_catalog.text, pg_catalog.int8) IS 'false: no row of the named index''s table has this key (the value of the index''s expression); true: one probably has';
COMMENT ON FUNCTION bloom_index_contains_key(pg_catalog.text, pg_catalog.uuid) IS 'false: no row of the named index''s table has this key (the value of the index''s expression); true: one probably has';
COMMENT ON FUNCTION bloom_index_contains_key(pg_catalog.regclass, pg_catalog.text) IS 'false: no row of the index''s table has this key (the value of the index''s expression); true: one probably has';
COMMENT ON FUNCTION bloom_index_contains_key(pg_catalog.regclass, pg_catalog.bytea) IS 'false: no row of the index''s table has this key (the value of the index''s expression); true: one probably has';
COMMENT ON FUNCTION bloom_index_contains_key(pg_catalog.regclass, pg_catalog.int8) IS 'false: no row of the index''s table has this key (the value of the index''s expression); true: one probably has';
COMMENT ON FUNCTION bloom_index_contains_key(pg_catalog.regclass, pg_catalog.uuid) IS 'false: no row of the index''s table has this key (the value of the index''s expression); true: one probably has';
