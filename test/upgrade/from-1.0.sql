-- Installs the oldest version, uses its entry points, stores filters, then updates step by step
-- to the newest; the suite then runs on the updated schema. Any failed check raises an error.
\set ON_ERROR_STOP 1
CREATE EXTENSION bloomfilter VERSION '1.0';
DO $$
BEGIN
  IF (SELECT extversion FROM pg_extension WHERE extname = 'bloomfilter') <> '1.0' THEN
    RAISE EXCEPTION 'expected version 1.0';
  END IF;
  IF to_regproc('bloom_filter_create') IS NOT NULL THEN
    RAISE EXCEPTION '1.0 must not have bloom_filter_create';
  END IF;
END $$;
-- Values written by 1.0, in every storage path.
CREATE TABLE upgrade_filters (id int PRIMARY KEY, f bloom, bytes bytea);
INSERT INTO upgrade_filters (id, f)
SELECT 1, bloom_agg('user' || i || '@mail.com') FROM generate_series(1, 100000) i;
INSERT INTO upgrade_filters (id, f) VALUES
  (2, bloom_add(bloom_empty(10), ARRAY['a', 'b'])),
  (3, bloom_add(bloom_empty(1000, 0.001), 'c'::text) | bloom_add(bloom_empty(1000, 0.001), 'd'::text));
UPDATE upgrade_filters SET bytes = f::bytea;
DO $$
BEGIN
  IF NOT (SELECT bloom_contains(f, 'user7@mail.com') AND NOT bloom_contains(f, 'ghost@mail.com')
          FROM upgrade_filters WHERE id = 1) THEN
    RAISE EXCEPTION '1.0 lookups are wrong';
  END IF;
END $$;

-- Step by step to the default version.
ALTER EXTENSION bloomfilter UPDATE TO '1.1';
ALTER EXTENSION bloomfilter UPDATE;
DO $$
DECLARE
  default_version text := (SELECT default_version FROM pg_available_extensions WHERE name = 'bloomfilter');
BEGIN
  IF (SELECT extversion FROM pg_extension WHERE extname = 'bloomfilter') <> default_version THEN
    RAISE EXCEPTION 'update did not reach %', default_version;
  END IF;
  -- Filters written by 1.0 read back byte for byte, and answer the same.
  IF EXISTS (SELECT 1 FROM upgrade_filters WHERE f::bytea <> bytes) THEN
    RAISE EXCEPTION 'stored filters changed across the update';
  END IF;
  IF NOT (SELECT bloom_contains(f, 'user7@mail.com') AND NOT bloom_contains(f, 'ghost@mail.com')
          FROM upgrade_filters WHERE id = 1) THEN
    RAISE EXCEPTION 'lookups after the update are wrong';
  END IF;
  IF (SELECT bloom_agg('user' || i || '@mail.com') FROM generate_series(1, 100000) i)::bytea
     <> (SELECT bytes FROM upgrade_filters WHERE id = 1) THEN
    RAISE EXCEPTION 'the updated version builds different bytes';
  END IF;
END $$;
DROP TABLE upgrade_filters;
\echo upgrade from 1.0: ok
