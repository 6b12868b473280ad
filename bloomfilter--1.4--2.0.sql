-- bloomfilter 2.0: a maintained filter is a bloomfilter index. Each maintained filter becomes an
-- index on its table's column, with the filter's capacity and error rate (a valid bloomfilter
-- index already on exactly that column is kept instead); then every trigger calling
-- bloom_filter_maintain, and the functions, tables and event trigger of maintained filters, are
-- dropped. The bloom type, its functions and aggregates are unchanged; bloom_check_path is new.
--
-- The script runs as a superuser (the extension is trusted): every name is quoted into the
-- statements it builds, and every operator and function is qualified, so nothing planted in a
-- schema on the search_path runs with its rights. Index builds run as the table's owner.
\echo Use "ALTER EXTENSION bloomfilter UPDATE TO '2.0'" to load this file. \quit

-- Dropped first, so that it does not run for the triggers dropped below.
DROP EVENT TRIGGER bloom_filter_sql_drop;

DO $$
DECLARE
  filter record;
  index_found pg_catalog.regclass;
  trigger record;
BEGIN
  FOR filter IN
    SELECT f.name, f.capacity, f.error_rate, c.oid AS relid, n.nspname, c.relname, c.relnamespace, c.relkind,
           c.relpersistence, a.attname, a.attnum, a.atttypid
    FROM @extschema@.bloom_filters f
    JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) f.relation::pg_catalog.oid
    JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
    LEFT JOIN pg_catalog.pg_attribute a
      ON a.attrelid OPERATOR(pg_catalog.=) c.oid AND a.attname OPERATOR(pg_catalog.=) f.column_name
         AND a.attnum OPERATOR(pg_catalog.>) 0::pg_catalog.int2 AND NOT a.attisdropped
    ORDER BY f.name COLLATE "C"
  LOOP
    IF filter.attnum IS NULL
       OR filter.relkind OPERATOR(pg_catalog.<>) ALL (ARRAY['r', 'p']::pg_catalog."char"[])
       OR filter.atttypid OPERATOR(pg_catalog.<>) ALL (ARRAY[
            'pg_catalog.text'::pg_catalog.regtype, 'pg_catalog.varchar'::pg_catalog.regtype,
            'pg_catalog.bytea'::pg_catalog.regtype, 'pg_catalog.int2'::pg_catalog.regtype,
            'pg_catalog.int4'::pg_catalog.regtype, 'pg_catalog.int8'::pg_catalog.regtype,
            'pg_catalog.uuid'::pg_catalog.regtype]::pg_catalog.oid[]) THEN
      RAISE WARNING 'maintained filter "%" is dropped: its table has no column it can index', filter.name;
      CONTINUE;
    END IF;
    IF filter.relpersistence OPERATOR(pg_catalog.=) 't'::pg_catalog."char" THEN
      RAISE WARNING 'maintained filter "%" is dropped: its table is temporary', filter.name
        USING HINT = 'Create a bloomfilter index on the table instead.';
      CONTINUE;
    END IF;
    -- A valid bloomfilter index on exactly the column is kept; otherwise one is made, named as the
    -- filter unless that name is taken in the table's schema (then PostgreSQL chooses one).
    FOR attempt IN 1..2 LOOP
      SELECT i.indexrelid::pg_catalog.regclass INTO index_found
      FROM pg_catalog.pg_index i
      JOIN pg_catalog.pg_class ic ON ic.oid OPERATOR(pg_catalog.=) i.indexrelid
      JOIN pg_catalog.pg_am am ON am.oid OPERATOR(pg_catalog.=) ic.relam
      WHERE i.indrelid OPERATOR(pg_catalog.=) filter.relid
        AND am.amname OPERATOR(pg_catalog.=) 'bloomfilter'::pg_catalog.name
        AND i.indnatts OPERATOR(pg_catalog.=) 1::pg_catalog.int2
        AND i.indkey[0] OPERATOR(pg_catalog.=) filter.attnum
        AND i.indexprs IS NULL AND i.indpred IS NULL AND i.indisvalid
      LIMIT 1;
      EXIT WHEN index_found IS NOT NULL OR attempt OPERATOR(pg_catalog.=) 2;
      IF pg_catalog.octet_length(filter.name) OPERATOR(pg_catalog.<=) 63
         AND NOT EXISTS (SELECT FROM pg_catalog.pg_class o
                         WHERE o.relname OPERATOR(pg_catalog.=) filter.name::pg_catalog.name
                           AND o.relnamespace OPERATOR(pg_catalog.=) filter.relnamespace) THEN
        EXECUTE pg_catalog.format(
          'CREATE INDEX %I ON %I.%I USING bloomfilter (%I) WITH (capacity = %L, error_rate = %L)',
          filter.name, filter.nspname, filter.relname, filter.attname, filter.capacity, filter.error_rate);
      ELSE
        EXECUTE pg_catalog.format(
          'CREATE INDEX ON %I.%I USING bloomfilter (%I) WITH (capacity = %L, error_rate = %L)',
          filter.nspname, filter.relname, filter.attname, filter.capacity, filter.error_rate);
      END IF;
    END LOOP;
  END LOOP;

  -- Every trigger that calls bloom_filter_maintain: those of the filters above, and any other.
  FOR trigger IN
    SELECT t.tgname, n.nspname, c.relname
    FROM pg_catalog.pg_trigger t
    JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.tgrelid
    JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
    WHERE t.tgfoid OPERATOR(pg_catalog.=) '@extschema@.bloom_filter_maintain()'::pg_catalog.regprocedure::pg_catalog.oid
      AND t.tgparentid OPERATOR(pg_catalog.=) 0::pg_catalog.oid
  LOOP
    EXECUTE pg_catalog.format('DROP TRIGGER %I ON %I.%I', trigger.tgname, trigger.nspname, trigger.relname);
  END LOOP;
END $$;

-- The policies first (they call bloom_filter_owned), then the functions (some read the tables).
DROP POLICY bloom_filters_read ON bloom_filters;
DROP POLICY bloom_filters_owner ON bloom_filters;
DROP POLICY bloom_filter_shards_read ON bloom_filter_shards;
DROP FUNCTION bloom_filter_sql_drop();
DROP FUNCTION bloom_filter_health(text);
DROP FUNCTION bloom_filter_contains(text, pg_catalog.text);
DROP FUNCTION bloom_filter_contains(text, pg_catalog.bytea);
DROP FUNCTION bloom_filter_contains(text, pg_catalog.int8);
DROP FUNCTION bloom_filter_contains(text, pg_catalog.uuid);
DROP FUNCTION bloom_filter_drop(text);
DROP FUNCTION bloom_filter_rebuild(text, pg_catalog.int8, pg_catalog.float8, pg_catalog.int4);
DROP FUNCTION bloom_filter_create(text, pg_catalog.regclass, pg_catalog.name, pg_catalog.int8, pg_catalog.float8, pg_catalog.int4);
DROP FUNCTION bloom_filter_install_triggers(text, pg_catalog.regclass, pg_catalog.name);
DROP FUNCTION bloom_filter_drop_triggers(text, pg_catalog.regclass);
DROP FUNCTION bloom_filter_build(pg_catalog.regclass, pg_catalog.name, pg_catalog.regtype, pg_catalog.int4, pg_catalog.int8, pg_catalog.float8);
DROP FUNCTION bloom_filter_forget_dropped();
DROP FUNCTION bloom_filter_forget(text);
DROP FUNCTION bloom_filter_store(text, pg_catalog.regclass, pg_catalog.name, pg_catalog.int8, pg_catalog.float8, pg_catalog.int4, pg_catalog.int8, bloom[], pg_catalog.bool);
DROP FUNCTION bloom_filter_maintain();
DROP FUNCTION bloom_filter_default_shards(pg_catalog.int8, pg_catalog.float8);
DROP FUNCTION bloom_filter_shard_capacity(pg_catalog.int8, pg_catalog.int4);
DROP FUNCTION bloom_filter_key_type(pg_catalog.regtype);
DROP FUNCTION bloom_filter_owned(pg_catalog.regclass);
DROP TABLE bloom_filter_shards;
DROP TABLE bloom_filters;

-- How this server process checks a filter's bits, chosen when the library loads.
CREATE FUNCTION bloom_check_path() RETURNS pg_catalog.text
    AS 'MODULE_PATHNAME', 'bloom_check_path' LANGUAGE C STABLE PARALLEL SAFE;
COMMENT ON FUNCTION bloom_check_path() IS 'the way this server process checks a filter''s bits: scalar, avx2 or avx512, the fastest of those the CPU has, timed when the library loaded';
