-- bloomfilter 2.1 -> 2.2: checks that name the index by text, resolved at each call,
-- bloom_index_contains_key, the check of an expression index's key as the index holds it, and
-- bloom_index_layers, the layers of an index that grows (WITH (expansion = N)), and
-- bloom_index_shards, where the shards of a Citus table's index are; the checks and bloom_hash
-- of composite keys, for multicolumn indexes.
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

-- The layers of an index created WITH (expansion = N), which grows by adding a layer N times
-- larger when its newest is full (one row for an index of fixed size): each one's capacity and
-- error rate, bytes, the keys the build added (layer 0), its first block and pages, the pages
-- past the fill the layer has at its capacity (null for a fixed size), the share of its bits set
-- and the error rate estimated from them.
CREATE FUNCTION bloom_index_layers(index pg_catalog.regclass,
    OUT layer pg_catalog.int4, OUT capacity pg_catalog.int8, OUT error_rate pg_catalog.float8,
    OUT bytes pg_catalog.int8, OUT inserted pg_catalog.int8, OUT first_block pg_catalog.int8,
    OUT pages pg_catalog.int8, OUT full_pages pg_catalog.int8, OUT fill pg_catalog.float8,
    OUT estimated_error_rate pg_catalog.float8)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'bloom_index_layers' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_index_layers(pg_catalog.regclass) IS 'the layers of a bloomfilter index: capacity, error rate, size, pages and fill of each';

-- For the index of a Citus table (whose coordinator's index is the empty shell's): each shard's
-- index, by the name Citus gives it on the nodes that hold the shard, with each node's host and
-- port. A reader follows those, and a key is present when one of them says so.
CREATE FUNCTION bloom_index_shards(index pg_catalog.regclass,
    OUT shard_id pg_catalog.int8, OUT shard_index pg_catalog.text,
    OUT node_name pg_catalog.text, OUT node_port pg_catalog.int4)
    RETURNS SETOF record
    AS 'MODULE_PATHNAME', 'bloom_index_shards' LANGUAGE C STABLE STRICT PARALLEL RESTRICTED;
-- The tablesample method by which bloom_index_contains on a Citus table's index asks each shard:
-- TABLESAMPLE bloom_index_probe(index name, key, key type's OID), all text, returns the first
-- tuple of a shard whose index may hold the key (whatever its visibility: the bits answer, not a
-- snapshot), none otherwise; a query through it may read no column. For a multicolumn index:
-- (index name, the composite key's hash in decimal, 'composite:' and the number of key columns).
CREATE FUNCTION bloom_index_probe(pg_catalog.internal) RETURNS pg_catalog.tsm_handler
    AS 'MODULE_PATHNAME', 'bloom_index_probe' LANGUAGE C STRICT;
COMMENT ON FUNCTION bloom_index_probe(pg_catalog.internal) IS 'tablesample method: a row of a Citus shard whose bloomfilter index may hold a key, none otherwise';
COMMENT ON FUNCTION bloom_index_shards(pg_catalog.regclass) IS 'the shards'' indexes of a Citus table''s bloomfilter index: shard id, index name, node host and port';

-- An index made before 2.2 keeps its fixed size, also through REINDEX: 2.2 makes a new index
-- without `expansion` grow (expansion = 2), so each bloomfilter index without the option is given
-- expansion = 0 here (one that has it keeps it). Until this update runs the library builds an
-- index without the option with a fixed size, as 2.1 did. The script runs as a superuser (the
-- extension is trusted): it runs no one's code, quotes every name with format('%I'), and
-- qualifies every operator. Other sessions' temporary indexes are left (they cannot be altered
-- and go with their session). PostgreSQL refuses ALTER INDEX ... SET on a partitioned index but
-- gives its options to the index of each partition created later, so a partitioned index's
-- options are set in pg_class, as ALTER INDEX would set them.
DO $$
DECLARE
  index_found record;
BEGIN
  FOR index_found IN
    SELECT c.oid, n.nspname, c.relname, c.relkind
    FROM pg_catalog.pg_class c
    JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
    JOIN pg_catalog.pg_am a ON a.oid OPERATOR(pg_catalog.=) c.relam
    WHERE a.amname OPERATOR(pg_catalog.=) 'bloomfilter'::pg_catalog.name
      AND c.relkind OPERATOR(pg_catalog.=) ANY (ARRAY['i', 'I']::pg_catalog."char"[])
      AND (c.relpersistence OPERATOR(pg_catalog.<>) 't'::pg_catalog."char"
           OR c.relnamespace OPERATOR(pg_catalog.=) pg_catalog.pg_my_temp_schema())
      AND NOT EXISTS (SELECT FROM pg_catalog.unnest(c.reloptions) o
                      WHERE o OPERATOR(pg_catalog.~~) 'expansion=%'::pg_catalog.text)
    ORDER BY c.oid
  LOOP
    IF index_found.relkind OPERATOR(pg_catalog.=) 'i'::pg_catalog."char" THEN
      EXECUTE pg_catalog.format('ALTER INDEX %I.%I SET (expansion = 0)',
                                index_found.nspname, index_found.relname);
    ELSE
      UPDATE pg_catalog.pg_class
      SET reloptions = pg_catalog.array_append(
            COALESCE(reloptions, ARRAY[]::pg_catalog.text[]), 'expansion=0'::pg_catalog.text)
      WHERE oid OPERATOR(pg_catalog.=) index_found.oid;
    END IF;
  END LOOP;
END $$;

-- bloom_index_info in C, with three more columns: `layers` (a check reads a page per layer),
-- `advice`, 'rebuild' when needs_rebuild, 'compact' when a layered index has more than one
-- layer or a REINDEX would make it half its size or less (REINDEX makes one, sized for the
-- rows), else null, and `keys_beyond_rows`, the keys the filter holds (estimated) past the rows
-- VACUUM last counted, which a rebuild drops. For a layered index it reads the
-- layers' pages (no longer bloom_info of bloom_index_filter, which may be too large for one
-- value): capacity, bits, bits set and estimated count summed over the layers, hashes layer 0's, the
-- rate of a key absent from every layer, and needs_rebuild when that rate is past 1.05 x
-- error_rate. An index of fixed size gives the same as before.
DROP FUNCTION bloom_index_info(pg_catalog.regclass);
CREATE FUNCTION bloom_index_info(index pg_catalog.regclass,
    OUT capacity pg_catalog.int8, OUT error_rate pg_catalog.float8, OUT bits pg_catalog.int8,
    OUT hashes pg_catalog.int4, OUT bytes pg_catalog.int8, OUT inserted pg_catalog.int8,
    OUT bits_set pg_catalog.int8, OUT fill pg_catalog.float8, OUT estimated_count pg_catalog.float8,
    OUT estimated_error_rate pg_catalog.float8, OUT needs_rebuild pg_catalog.bool,
    OUT layers pg_catalog.int4, OUT advice pg_catalog.text, OUT keys_beyond_rows pg_catalog.int8)
    AS 'MODULE_PATHNAME', 'bloom_index_info' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_index_info(pg_catalog.regclass) IS 'size, fill and estimated error rate of a bloomfilter index (summed over its layers), whether it needs a rebuild, advice: rebuild, or compact (REINDEX) a grown index, and the keys it holds past the rows VACUUM counted';

-- Composite keys: the values of a multicolumn bloomfilter index's key columns (2 to 8), in
-- column order, combined into one hash (docs/format.md, "Composite keys"). Each value is of any
-- type, checked at the call against its column (42804 when the count or a type does not match);
-- an untyped literal is read as its column's type. These take 3 to 9 arguments, so every call of
-- the one-value forms above resolves as before; an index name as a quoted literal takes the text
-- forms, as there. A NULL value gives NULL: a row with a NULL key column is not indexed.

CREATE FUNCTION bloom_index_contains(index pg_catalog.text, value1 pg_catalog."any", value2 pg_catalog."any") RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_composite_named' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_index_contains(index pg_catalog.text, value1 pg_catalog."any", value2 pg_catalog."any", value3 pg_catalog."any") RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_composite_named' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_index_contains(index pg_catalog.text, value1 pg_catalog."any", value2 pg_catalog."any", value3 pg_catalog."any", value4 pg_catalog."any") RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_composite_named' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_index_contains(index pg_catalog.text, value1 pg_catalog."any", value2 pg_catalog."any", value3 pg_catalog."any", value4 pg_catalog."any", value5 pg_catalog."any") RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_composite_named' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_index_contains(index pg_catalog.text, value1 pg_catalog."any", value2 pg_catalog."any", value3 pg_catalog."any", value4 pg_catalog."any", value5 pg_catalog."any", value6 pg_catalog."any") RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_composite_named' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_index_contains(index pg_catalog.text, value1 pg_catalog."any", value2 pg_catalog."any", value3 pg_catalog."any", value4 pg_catalog."any", value5 pg_catalog."any", value6 pg_catalog."any", value7 pg_catalog."any") RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_composite_named' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_index_contains(index pg_catalog.text, value1 pg_catalog."any", value2 pg_catalog."any", value3 pg_catalog."any", value4 pg_catalog."any", value5 pg_catalog."any", value6 pg_catalog."any", value7 pg_catalog."any", value8 pg_catalog."any") RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_composite_named' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_index_contains(pg_catalog.text, pg_catalog."any", pg_catalog."any") IS 'false: no row of the named index''s table has this key, of 2 columns; true: one probably has';
COMMENT ON FUNCTION bloom_index_contains(pg_catalog.text, pg_catalog."any", pg_catalog."any", pg_catalog."any") IS 'false: no row of the named index''s table has this key, of 3 columns; true: one probably has';
COMMENT ON FUNCTION bloom_index_contains(pg_catalog.text, pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any") IS 'false: no row of the named index''s table has this key, of 4 columns; true: one probably has';
COMMENT ON FUNCTION bloom_index_contains(pg_catalog.text, pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any") IS 'false: no row of the named index''s table has this key, of 5 columns; true: one probably has';
COMMENT ON FUNCTION bloom_index_contains(pg_catalog.text, pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any") IS 'false: no row of the named index''s table has this key, of 6 columns; true: one probably has';
COMMENT ON FUNCTION bloom_index_contains(pg_catalog.text, pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any") IS 'false: no row of the named index''s table has this key, of 7 columns; true: one probably has';
COMMENT ON FUNCTION bloom_index_contains(pg_catalog.text, pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any") IS 'false: no row of the named index''s table has this key, of 8 columns; true: one probably has';

CREATE FUNCTION bloom_index_contains(index pg_catalog.regclass, value1 pg_catalog."any", value2 pg_catalog."any") RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_composite' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_index_contains(index pg_catalog.regclass, value1 pg_catalog."any", value2 pg_catalog."any", value3 pg_catalog."any") RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_composite' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_index_contains(index pg_catalog.regclass, value1 pg_catalog."any", value2 pg_catalog."any", value3 pg_catalog."any", value4 pg_catalog."any") RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_composite' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_index_contains(index pg_catalog.regclass, value1 pg_catalog."any", value2 pg_catalog."any", value3 pg_catalog."any", value4 pg_catalog."any", value5 pg_catalog."any") RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_composite' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_index_contains(index pg_catalog.regclass, value1 pg_catalog."any", value2 pg_catalog."any", value3 pg_catalog."any", value4 pg_catalog."any", value5 pg_catalog."any", value6 pg_catalog."any") RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_composite' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_index_contains(index pg_catalog.regclass, value1 pg_catalog."any", value2 pg_catalog."any", value3 pg_catalog."any", value4 pg_catalog."any", value5 pg_catalog."any", value6 pg_catalog."any", value7 pg_catalog."any") RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_composite' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_index_contains(index pg_catalog.regclass, value1 pg_catalog."any", value2 pg_catalog."any", value3 pg_catalog."any", value4 pg_catalog."any", value5 pg_catalog."any", value6 pg_catalog."any", value7 pg_catalog."any", value8 pg_catalog."any") RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_composite' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_index_contains(pg_catalog.regclass, pg_catalog."any", pg_catalog."any") IS 'false: no row of the index''s table has this key, of 2 columns; true: one probably has';
COMMENT ON FUNCTION bloom_index_contains(pg_catalog.regclass, pg_catalog."any", pg_catalog."any", pg_catalog."any") IS 'false: no row of the index''s table has this key, of 3 columns; true: one probably has';
COMMENT ON FUNCTION bloom_index_contains(pg_catalog.regclass, pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any") IS 'false: no row of the index''s table has this key, of 4 columns; true: one probably has';
COMMENT ON FUNCTION bloom_index_contains(pg_catalog.regclass, pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any") IS 'false: no row of the index''s table has this key, of 5 columns; true: one probably has';
COMMENT ON FUNCTION bloom_index_contains(pg_catalog.regclass, pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any") IS 'false: no row of the index''s table has this key, of 6 columns; true: one probably has';
COMMENT ON FUNCTION bloom_index_contains(pg_catalog.regclass, pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any") IS 'false: no row of the index''s table has this key, of 7 columns; true: one probably has';
COMMENT ON FUNCTION bloom_index_contains(pg_catalog.regclass, pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any") IS 'false: no row of the index''s table has this key, of 8 columns; true: one probably has';

CREATE FUNCTION bloom_index_contains_key(index pg_catalog.text, key1 pg_catalog."any", key2 pg_catalog."any") RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_key_composite_named' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_index_contains_key(index pg_catalog.text, key1 pg_catalog."any", key2 pg_catalog."any", key3 pg_catalog."any") RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_key_composite_named' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_index_contains_key(index pg_catalog.text, key1 pg_catalog."any", key2 pg_catalog."any", key3 pg_catalog."any", key4 pg_catalog."any") RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_key_composite_named' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_index_contains_key(index pg_catalog.text, key1 pg_catalog."any", key2 pg_catalog."any", key3 pg_catalog."any", key4 pg_catalog."any", key5 pg_catalog."any") RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_key_composite_named' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_index_contains_key(index pg_catalog.text, key1 pg_catalog."any", key2 pg_catalog."any", key3 pg_catalog."any", key4 pg_catalog."any", key5 pg_catalog."any", key6 pg_catalog."any") RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_key_composite_named' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_index_contains_key(index pg_catalog.text, key1 pg_catalog."any", key2 pg_catalog."any", key3 pg_catalog."any", key4 pg_catalog."any", key5 pg_catalog."any", key6 pg_catalog."any", key7 pg_catalog."any") RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_key_composite_named' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_index_contains_key(index pg_catalog.text, key1 pg_catalog."any", key2 pg_catalog."any", key3 pg_catalog."any", key4 pg_catalog."any", key5 pg_catalog."any", key6 pg_catalog."any", key7 pg_catalog."any", key8 pg_catalog."any") RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_key_composite_named' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_index_contains_key(pg_catalog.text, pg_catalog."any", pg_catalog."any") IS 'false: no row of the named index''s table has this key (the values of the index''s expressions), of 2 columns; true: one probably has';
COMMENT ON FUNCTION bloom_index_contains_key(pg_catalog.text, pg_catalog."any", pg_catalog."any", pg_catalog."any") IS 'false: no row of the named index''s table has this key (the values of the index''s expressions), of 3 columns; true: one probably has';
COMMENT ON FUNCTION bloom_index_contains_key(pg_catalog.text, pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any") IS 'false: no row of the named index''s table has this key (the values of the index''s expressions), of 4 columns; true: one probably has';
COMMENT ON FUNCTION bloom_index_contains_key(pg_catalog.text, pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any") IS 'false: no row of the named index''s table has this key (the values of the index''s expressions), of 5 columns; true: one probably has';
COMMENT ON FUNCTION bloom_index_contains_key(pg_catalog.text, pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any") IS 'false: no row of the named index''s table has this key (the values of the index''s expressions), of 6 columns; true: one probably has';
COMMENT ON FUNCTION bloom_index_contains_key(pg_catalog.text, pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any") IS 'false: no row of the named index''s table has this key (the values of the index''s expressions), of 7 columns; true: one probably has';
COMMENT ON FUNCTION bloom_index_contains_key(pg_catalog.text, pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any") IS 'false: no row of the named index''s table has this key (the values of the index''s expressions), of 8 columns; true: one probably has';

CREATE FUNCTION bloom_index_contains_key(index pg_catalog.regclass, key1 pg_catalog."any", key2 pg_catalog."any") RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_key_composite' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_index_contains_key(index pg_catalog.regclass, key1 pg_catalog."any", key2 pg_catalog."any", key3 pg_catalog."any") RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_key_composite' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_index_contains_key(index pg_catalog.regclass, key1 pg_catalog."any", key2 pg_catalog."any", key3 pg_catalog."any", key4 pg_catalog."any") RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_key_composite' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_index_contains_key(index pg_catalog.regclass, key1 pg_catalog."any", key2 pg_catalog."any", key3 pg_catalog."any", key4 pg_catalog."any", key5 pg_catalog."any") RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_key_composite' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_index_contains_key(index pg_catalog.regclass, key1 pg_catalog."any", key2 pg_catalog."any", key3 pg_catalog."any", key4 pg_catalog."any", key5 pg_catalog."any", key6 pg_catalog."any") RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_key_composite' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_index_contains_key(index pg_catalog.regclass, key1 pg_catalog."any", key2 pg_catalog."any", key3 pg_catalog."any", key4 pg_catalog."any", key5 pg_catalog."any", key6 pg_catalog."any", key7 pg_catalog."any") RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_key_composite' LANGUAGE C STABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_index_contains_key(index pg_catalog.regclass, key1 pg_catalog."any", key2 pg_catalog."any", key3 pg_catalog."any", key4 pg_catalog."any", key5 pg_catalog."any", key6 pg_catalog."any", key7 pg_catalog."any", key8 pg_catalog."any") RETURNS pg_catalog.bool
    AS 'MODULE_PATHNAME', 'bloom_index_contains_key_composite' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_index_contains_key(pg_catalog.regclass, pg_catalog."any", pg_catalog."any") IS 'false: no row of the index''s table has this key (the values of the index''s expressions), of 2 columns; true: one probably has';
COMMENT ON FUNCTION bloom_index_contains_key(pg_catalog.regclass, pg_catalog."any", pg_catalog."any", pg_catalog."any") IS 'false: no row of the index''s table has this key (the values of the index''s expressions), of 3 columns; true: one probably has';
COMMENT ON FUNCTION bloom_index_contains_key(pg_catalog.regclass, pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any") IS 'false: no row of the index''s table has this key (the values of the index''s expressions), of 4 columns; true: one probably has';
COMMENT ON FUNCTION bloom_index_contains_key(pg_catalog.regclass, pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any") IS 'false: no row of the index''s table has this key (the values of the index''s expressions), of 5 columns; true: one probably has';
COMMENT ON FUNCTION bloom_index_contains_key(pg_catalog.regclass, pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any") IS 'false: no row of the index''s table has this key (the values of the index''s expressions), of 6 columns; true: one probably has';
COMMENT ON FUNCTION bloom_index_contains_key(pg_catalog.regclass, pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any") IS 'false: no row of the index''s table has this key (the values of the index''s expressions), of 7 columns; true: one probably has';
COMMENT ON FUNCTION bloom_index_contains_key(pg_catalog.regclass, pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any") IS 'false: no row of the index''s table has this key (the values of the index''s expressions), of 8 columns; true: one probably has';

COMMENT ON ACCESS METHOD bloomfilter IS 'a Bloom filter of a column, or of up to 8 (a composite key), kept current by PostgreSQL: checked with bloom_index_contains, never scanned';

-- The hash of a composite key: bloom_hash of each value (an untyped literal as text), combined
-- as a multicolumn index combines its columns' values.
CREATE FUNCTION bloom_hash(value1 pg_catalog."any", value2 pg_catalog."any") RETURNS pg_catalog.int8
    AS 'MODULE_PATHNAME', 'bloom_hash_composite' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_hash(value1 pg_catalog."any", value2 pg_catalog."any", value3 pg_catalog."any") RETURNS pg_catalog.int8
    AS 'MODULE_PATHNAME', 'bloom_hash_composite' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_hash(value1 pg_catalog."any", value2 pg_catalog."any", value3 pg_catalog."any", value4 pg_catalog."any") RETURNS pg_catalog.int8
    AS 'MODULE_PATHNAME', 'bloom_hash_composite' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_hash(value1 pg_catalog."any", value2 pg_catalog."any", value3 pg_catalog."any", value4 pg_catalog."any", value5 pg_catalog."any") RETURNS pg_catalog.int8
    AS 'MODULE_PATHNAME', 'bloom_hash_composite' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_hash(value1 pg_catalog."any", value2 pg_catalog."any", value3 pg_catalog."any", value4 pg_catalog."any", value5 pg_catalog."any", value6 pg_catalog."any") RETURNS pg_catalog.int8
    AS 'MODULE_PATHNAME', 'bloom_hash_composite' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_hash(value1 pg_catalog."any", value2 pg_catalog."any", value3 pg_catalog."any", value4 pg_catalog."any", value5 pg_catalog."any", value6 pg_catalog."any", value7 pg_catalog."any") RETURNS pg_catalog.int8
    AS 'MODULE_PATHNAME', 'bloom_hash_composite' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bloom_hash(value1 pg_catalog."any", value2 pg_catalog."any", value3 pg_catalog."any", value4 pg_catalog."any", value5 pg_catalog."any", value6 pg_catalog."any", value7 pg_catalog."any", value8 pg_catalog."any") RETURNS pg_catalog.int8
    AS 'MODULE_PATHNAME', 'bloom_hash_composite' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bloom_hash(pg_catalog."any", pg_catalog."any") IS 'the 64-bit hash that places a composite key of 2 values in a filter (format version 2)';
COMMENT ON FUNCTION bloom_hash(pg_catalog."any", pg_catalog."any", pg_catalog."any") IS 'the 64-bit hash that places a composite key of 3 values in a filter (format version 2)';
COMMENT ON FUNCTION bloom_hash(pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any") IS 'the 64-bit hash that places a composite key of 4 values in a filter (format version 2)';
COMMENT ON FUNCTION bloom_hash(pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any") IS 'the 64-bit hash that places a composite key of 5 values in a filter (format version 2)';
COMMENT ON FUNCTION bloom_hash(pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any") IS 'the 64-bit hash that places a composite key of 6 values in a filter (format version 2)';
COMMENT ON FUNCTION bloom_hash(pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any") IS 'the 64-bit hash that places a composite key of 7 values in a filter (format version 2)';
COMMENT ON FUNCTION bloom_hash(pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any", pg_catalog."any") IS 'the 64-bit hash that places a composite key of 8 values in a filter (format version 2)';
