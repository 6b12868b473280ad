-- bloomfilter 1.1: maintained, sharded filters kept in step with a table's column.
\echo Use "ALTER EXTENSION bloomfilter UPDATE TO '1.1'" to load this file. \quit

-- One row per maintained filter.
CREATE TABLE bloom_filters (
    name text PRIMARY KEY,
    relation pg_catalog.regclass NOT NULL,
    column_name pg_catalog.name NOT NULL,
    key_type pg_catalog.regtype NOT NULL,
    capacity pg_catalog.int8 NOT NULL CHECK (capacity >= 1),
    error_rate pg_catalog.float8 NOT NULL CHECK (error_rate > 0 AND error_rate < 1),
    shards pg_catalog.int4 NOT NULL CHECK (shards >= 1),
    shard_capacity pg_catalog.int8 NOT NULL CHECK (shard_capacity >= 1)
);
COMMENT ON TABLE bloom_filters IS 'maintained bloom filters: which column of which table each one follows, and its sizing';

-- One row per shard of a maintained filter; an add rewrites only its shard. Default shards are
-- under 2 KB, so they stay inside their row and no compression is ever tried (the type's STORAGE
-- external); larger ones go out of line uncompressed and are read in slices.
CREATE TABLE bloom_filter_shards (
    -- No foreign key to bloom_filters: a parallel pg_restore loads the two tables' rows at the
    -- same time, and would reject shards whose filter row is not loaded yet.
    name text NOT NULL,
    shard pg_catalog.int4 NOT NULL,
    f bloom NOT NULL,
    PRIMARY KEY (name, shard)
);
COMMENT ON TABLE bloom_filter_shards IS 'the shard filters of maintained bloom filters';

-- Who may do what, for an extension any database owner can install (trusted): whoever may read
-- a table's column may read its filter; the table's owner (or a member of its role) creates,
-- rebuilds and drops it; inserting users add through the trigger, which runs as that owner.
GRANT SELECT, INSERT, UPDATE, DELETE ON bloom_filters, bloom_filter_shards TO PUBLIC;
ALTER TABLE bloom_filters ENABLE ROW LEVEL SECURITY;
ALTER TABLE bloom_filter_shards ENABLE ROW LEVEL SECURITY;
CREATE FUNCTION bloom_filter_owned(relation pg_catalog.regclass) RETURNS pg_catalog.bool
LANGUAGE sql STABLE STRICT PARALLEL SAFE
RETURN pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid = relation), 'USAGE');
COMMENT ON FUNCTION bloom_filter_owned(pg_catalog.regclass) IS 'whether the current role owns (or is a member of the owner of) a table';
CREATE POLICY bloom_filters_read ON bloom_filters FOR SELECT
  USING (pg_catalog.has_column_privilege(relation, column_name::text, 'SELECT'));
CREATE POLICY bloom_filters_owner ON bloom_filters FOR ALL
  USING (@extschema@.bloom_filter_owned(relation));
CREATE POLICY bloom_filter_shards_read ON bloom_filter_shards FOR SELECT
  USING (EXISTS (SELECT 1 FROM @extschema@.bloom_filters c WHERE c.name = bloom_filter_shards.name));
CREATE POLICY bloom_filter_shards_owner ON bloom_filter_shards FOR ALL
  USING (EXISTS (SELECT 1 FROM @extschema@.bloom_filters c
                 WHERE c.name = bloom_filter_shards.name AND @extschema@.bloom_filter_owned(c.relation)));

-- pg_dump dumps their rows, so maintained filters survive dump and restore.
SELECT pg_catalog.pg_extension_config_dump('bloom_filters', '');
SELECT pg_catalog.pg_extension_config_dump('bloom_filter_shards', '');

-- The key expression for a column: text-like columns are hashed as text, integers as bigint.
CREATE FUNCTION bloom_filter_key_type(column_type pg_catalog.regtype) RETURNS pg_catalog.regtype
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
BEGIN
  CASE column_type
    WHEN 'pg_catalog.text'::pg_catalog.regtype, 'pg_catalog.varchar'::pg_catalog.regtype THEN
      RETURN 'pg_catalog.text'::pg_catalog.regtype;
    WHEN 'pg_catalog.int2'::pg_catalog.regtype, 'pg_catalog.int4'::pg_catalog.regtype,
         'pg_catalog.int8'::pg_catalog.regtype THEN
      RETURN 'pg_catalog.int8'::pg_catalog.regtype;
    WHEN 'pg_catalog.bytea'::pg_catalog.regtype, 'pg_catalog.uuid'::pg_catalog.regtype THEN
      RETURN column_type;
    ELSE
      RAISE EXCEPTION 'bloom filters can follow text, varchar, bytea, smallint, integer, bigint or uuid columns, not %', column_type
        USING ERRCODE = 'datatype_mismatch';
  END CASE;
END $$;
COMMENT ON FUNCTION bloom_filter_key_type(pg_catalog.regtype) IS 'the key type a column of the given type is hashed as';

-- Shards hold a binomial share of the keys: size each for its mean plus four standard deviations.
CREATE FUNCTION bloom_filter_shard_capacity(capacity pg_catalog.int8, shards pg_catalog.int4) RETURNS pg_catalog.int8
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN pg_catalog.ceil(capacity::pg_catalog.float8 / shards
       + 4 * pg_catalog.sqrt(capacity::pg_catalog.float8 / shards * (1 - 1.0::pg_catalog.float8 / shards)))::pg_catalog.int8;
COMMENT ON FUNCTION bloom_filter_shard_capacity(pg_catalog.int8, pg_catalog.int4) IS 'the capacity of each shard of a maintained filter';

-- The default shard count: the smallest power of two whose shards stay under 2000 bytes, inside
-- their row (PostgreSQL moves values out of line above about 2 KB).
CREATE FUNCTION bloom_filter_default_shards(capacity pg_catalog.int8, error_rate pg_catalog.float8) RETURNS pg_catalog.int4
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
  shards pg_catalog.int4 := 1;
BEGIN
  WHILE shards < 65536 AND (SELECT bytes FROM @extschema@.bloom_info(@extschema@.bloom_empty(
          @extschema@.bloom_filter_shard_capacity(capacity, shards), error_rate))) > 2000 LOOP
    shards := shards * 2;
  END LOOP;
  RETURN shards;
END $$;
COMMENT ON FUNCTION bloom_filter_default_shards(pg_catalog.int8, pg_catalog.float8) IS 'the default shard count of a maintained filter: shards under 2000 bytes';

-- The trigger function lives in the table's schema and belongs to whoever created the filter
-- (the table's owner), so it runs with the owner's rights whoever inserts.
CREATE FUNCTION bloom_filter_trigger_function(cfg bloom_filters) RETURNS text
LANGUAGE sql STABLE STRICT PARALLEL SAFE
RETURN pg_catalog.format('%I.%I',
  (SELECT n.nspname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
   WHERE c.oid = cfg.relation),
  'bloom_filter_' || pg_catalog.md5(cfg.name) || '_add');
COMMENT ON FUNCTION bloom_filter_trigger_function(bloom_filters) IS 'the name of the trigger function of a maintained filter';

CREATE FUNCTION bloom_filter_drop_triggers(cfg bloom_filters) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  trigger_name pg_catalog.name;
BEGIN
  FOR trigger_name IN
    SELECT t.tgname FROM pg_catalog.pg_trigger t
    WHERE t.tgrelid = cfg.relation
      AND t.tgname IN ('bloom_filter_' || cfg.name || '_insert', 'bloom_filter_' || cfg.name || '_update')
  LOOP
    EXECUTE pg_catalog.format('DROP TRIGGER %I ON %s', trigger_name, cfg.relation);
  END LOOP;
END $$;
COMMENT ON FUNCTION bloom_filter_drop_triggers(bloom_filters) IS 'drops the triggers of a maintained filter';

-- (Re)creates the trigger function and triggers that add new and changed values of the column.
-- The function is generated per filter with the column, key type and shard count written in, so
-- PL/pgSQL caches its plan: a signup costs one extra single-row UPDATE of a small shard.
CREATE FUNCTION bloom_filter_install_triggers(filter_name text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  cfg @extschema@.bloom_filters;
  add_function text;
BEGIN
  SELECT * INTO STRICT cfg FROM @extschema@.bloom_filters WHERE name = filter_name;
  add_function := @extschema@.bloom_filter_trigger_function(cfg);
  EXECUTE pg_catalog.format($f$
    CREATE OR REPLACE FUNCTION %s() RETURNS trigger LANGUAGE plpgsql
    SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $body$
    BEGIN
      UPDATE @extschema@.bloom_filter_shards SET f = @extschema@.bloom_add(f, NEW.%I::%s)
      WHERE name = %L AND shard = @extschema@.bloom_shard(NEW.%I::%s, %s);
      RETURN NULL;
    END $body$ $f$, add_function, cfg.column_name, cfg.key_type, cfg.name, cfg.column_name,
    cfg.key_type, cfg.shards);
  PERFORM @extschema@.bloom_filter_drop_triggers(cfg);
  EXECUTE pg_catalog.format(
    'CREATE TRIGGER %I AFTER INSERT ON %s FOR EACH ROW EXECUTE FUNCTION %s()',
    'bloom_filter_' || cfg.name || '_insert', cfg.relation, add_function);
  EXECUTE pg_catalog.format(
    'CREATE TRIGGER %I AFTER UPDATE OF %I ON %s FOR EACH ROW WHEN (OLD.%I IS DISTINCT FROM NEW.%I) EXECUTE FUNCTION %s()',
    'bloom_filter_' || cfg.name || '_update', cfg.column_name, cfg.relation, cfg.column_name,
    cfg.column_name, add_function);
END $$;
COMMENT ON FUNCTION bloom_filter_install_triggers(text) IS 'creates the triggers that keep a maintained filter current';

-- Fills the shards of a filter from the table's rows (the caller holds a SHARE lock on it).
CREATE FUNCTION bloom_filter_fill(filter_name text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  cfg @extschema@.bloom_filters;
BEGIN
  SELECT * INTO STRICT cfg FROM @extschema@.bloom_filters WHERE name = filter_name;
  DELETE FROM @extschema@.bloom_filter_shards WHERE name = cfg.name;
  EXECUTE pg_catalog.format($q$
    INSERT INTO @extschema@.bloom_filter_shards (name, shard, f)
    SELECT $1, s, COALESCE(built.f, @extschema@.bloom_empty($3, $4))
    FROM pg_catalog.generate_series(0, $2 - 1) AS s
    LEFT JOIN (SELECT @extschema@.bloom_shard(%1$I::%2$s, $2) AS shard,
                      @extschema@.bloom_agg(%1$I::%2$s, $3, $4) AS f
               FROM %3$s WHERE %1$I IS NOT NULL GROUP BY 1) AS built ON built.shard = s $q$,
    cfg.column_name, cfg.key_type, cfg.relation)
  USING cfg.name, cfg.shards, cfg.shard_capacity, cfg.error_rate;
END $$;
COMMENT ON FUNCTION bloom_filter_fill(text) IS 'builds the shards of a maintained filter from its table';

CREATE FUNCTION bloom_filter_create(name text, relation pg_catalog.regclass, column_name pg_catalog.name,
    capacity pg_catalog.int8, error_rate pg_catalog.float8 DEFAULT 0.01, shards pg_catalog.int4 DEFAULT NULL)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  column_type pg_catalog.regtype;
  shard_count pg_catalog.int4;
BEGIN
  SELECT a.atttypid INTO column_type FROM pg_catalog.pg_attribute a
  WHERE a.attrelid = relation AND a.attname = column_name AND a.attnum > 0 AND NOT a.attisdropped;
  IF column_type IS NULL THEN
    RAISE EXCEPTION 'column "%" of relation % does not exist', column_name, relation
      USING ERRCODE = 'undefined_column';
  END IF;
  -- Reuses bloom_empty's checks (and messages) for capacity and error_rate.
  PERFORM @extschema@.bloom_empty(capacity, error_rate);
  IF shards IS NOT NULL AND shards < 1 THEN
    RAISE EXCEPTION 'shards must be between 1 and 65536, got %', shards USING ERRCODE = 'invalid_parameter_value';
  END IF;
  shard_count := COALESCE(shards, @extschema@.bloom_filter_default_shards(capacity, error_rate));
  -- Writers wait until the filter and its triggers exist, so no row is missed; readers do not.
  EXECUTE pg_catalog.format('LOCK TABLE %s IN SHARE MODE', relation);
  INSERT INTO @extschema@.bloom_filters VALUES (name, relation, column_name,
    @extschema@.bloom_filter_key_type(column_type), capacity, error_rate, shard_count,
    @extschema@.bloom_filter_shard_capacity(capacity, shard_count));
  PERFORM @extschema@.bloom_filter_fill(name);
  PERFORM @extschema@.bloom_filter_install_triggers(name);
END $$;
COMMENT ON FUNCTION bloom_filter_create(text, pg_catalog.regclass, pg_catalog.name, pg_catalog.int8, pg_catalog.float8, pg_catalog.int4)
  IS 'creates a sharded filter over a column, built from the existing rows and kept current by triggers';

CREATE FUNCTION bloom_filter_rebuild(filter_name text, capacity pg_catalog.int8 DEFAULT NULL,
    error_rate pg_catalog.float8 DEFAULT NULL, shards pg_catalog.int4 DEFAULT NULL)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  cfg @extschema@.bloom_filters;
  new_capacity pg_catalog.int8;
  new_error_rate pg_catalog.float8;
  new_shards pg_catalog.int4;
BEGIN
  SELECT * INTO cfg FROM @extschema@.bloom_filters WHERE name = filter_name;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'bloom filter "%" does not exist', filter_name USING ERRCODE = 'undefined_object';
  END IF;
  new_capacity := COALESCE(capacity, cfg.capacity);
  new_error_rate := COALESCE(error_rate, cfg.error_rate);
  PERFORM @extschema@.bloom_empty(new_capacity, new_error_rate);
  new_shards := COALESCE(shards, CASE WHEN capacity IS NULL AND error_rate IS NULL THEN cfg.shards
                                      ELSE @extschema@.bloom_filter_default_shards(new_capacity, new_error_rate) END);
  IF new_shards < 1 THEN
    RAISE EXCEPTION 'shards must be between 1 and 65536, got %', new_shards USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- SHARE: writers wait for the rebuild, readers keep reading the old shards until it commits.
  EXECUTE pg_catalog.format('LOCK TABLE %s IN SHARE MODE', cfg.relation);
  UPDATE @extschema@.bloom_filters SET capacity = new_capacity, error_rate = new_error_rate,
    shards = new_shards, shard_capacity = @extschema@.bloom_filter_shard_capacity(new_capacity, new_shards)
  WHERE name = cfg.name;
  PERFORM @extschema@.bloom_filter_fill(cfg.name);
  IF new_shards <> cfg.shards THEN
    PERFORM @extschema@.bloom_filter_install_triggers(cfg.name);
  END IF;
END $$;
COMMENT ON FUNCTION bloom_filter_rebuild(text, pg_catalog.int8, pg_catalog.float8, pg_catalog.int4)
  IS 'rebuilds a maintained filter from its table (after deletes, or with a new size) without blocking readers';

CREATE FUNCTION bloom_filter_drop(filter_name text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  cfg @extschema@.bloom_filters;
BEGIN
  SELECT * INTO cfg FROM @extschema@.bloom_filters WHERE name = filter_name;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'bloom filter "%" does not exist', filter_name USING ERRCODE = 'undefined_object';
  END IF;
  PERFORM @extschema@.bloom_filter_drop_triggers(cfg);
  EXECUTE pg_catalog.format('DROP FUNCTION IF EXISTS %s()', @extschema@.bloom_filter_trigger_function(cfg));
  DELETE FROM @extschema@.bloom_filter_shards WHERE name = cfg.name;
  DELETE FROM @extschema@.bloom_filters WHERE name = cfg.name;
END $$;
COMMENT ON FUNCTION bloom_filter_drop(text) IS 'drops a maintained filter, its shards and its triggers';

CREATE FUNCTION bloom_filter_contains(filter_name text, value text) RETURNS pg_catalog.bool
LANGUAGE sql STABLE PARALLEL SAFE
RETURN (SELECT @extschema@.bloom_contains(s.f, value)
        FROM @extschema@.bloom_filters c JOIN @extschema@.bloom_filter_shards s USING (name)
        WHERE c.name = filter_name AND s.shard = @extschema@.bloom_shard(value, c.shards));
CREATE FUNCTION bloom_filter_contains(filter_name text, value pg_catalog.bytea) RETURNS pg_catalog.bool
LANGUAGE sql STABLE PARALLEL SAFE
RETURN (SELECT @extschema@.bloom_contains(s.f, value)
        FROM @extschema@.bloom_filters c JOIN @extschema@.bloom_filter_shards s USING (name)
        WHERE c.name = filter_name AND s.shard = @extschema@.bloom_shard(value, c.shards));
CREATE FUNCTION bloom_filter_contains(filter_name text, value pg_catalog.int8) RETURNS pg_catalog.bool
LANGUAGE sql STABLE PARALLEL SAFE
RETURN (SELECT @extschema@.bloom_contains(s.f, value)
        FROM @extschema@.bloom_filters c JOIN @extschema@.bloom_filter_shards s USING (name)
        WHERE c.name = filter_name AND s.shard = @extschema@.bloom_shard(value, c.shards));
CREATE FUNCTION bloom_filter_contains(filter_name text, value pg_catalog.uuid) RETURNS pg_catalog.bool
LANGUAGE sql STABLE PARALLEL SAFE
RETURN (SELECT @extschema@.bloom_contains(s.f, value)
        FROM @extschema@.bloom_filters c JOIN @extschema@.bloom_filter_shards s USING (name)
        WHERE c.name = filter_name AND s.shard = @extschema@.bloom_shard(value, c.shards));
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
LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT c.name, c.relation, c.column_name, c.capacity, c.error_rate, c.shards,
         sum(i.bytes)::pg_catalog.int8, sum(i.inserted)::pg_catalog.int8, sum(i.estimated_count),
         avg(i.fill), max(i.fill), avg(i.estimated_error_rate), max(i.estimated_error_rate),
         -- Rebuild when a check is now noticeably more likely to be wrong than asked for, or the
         -- filter holds more keys than it was sized for.
         avg(i.estimated_error_rate) > 1.05 * c.error_rate OR sum(i.estimated_count) > c.capacity
  FROM @extschema@.bloom_filters c JOIN @extschema@.bloom_filter_shards s USING (name),
       LATERAL @extschema@.bloom_info(s.f) AS i
  WHERE c.name = filter_name
  GROUP BY c.name, c.relation, c.column_name, c.capacity, c.error_rate, c.shards
$$;
COMMENT ON FUNCTION bloom_filter_health(text) IS 'size, fill and estimated error rate of a maintained filter against its target';
