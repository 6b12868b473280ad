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

-- Step by step to the default version, with a maintained filter made by 1.1 (a generated
-- trigger function per filter) to be converted by 1.3, then into a bloomfilter index by 2.0.
ALTER EXTENSION bloomfilter UPDATE TO '1.1';
CREATE TABLE upgrade_accounts (id int PRIMARY KEY, email text);
INSERT INTO upgrade_accounts SELECT i, 'old' || i || '@mail.com' FROM generate_series(1, 1000) i;
DO $$ BEGIN PERFORM bloom_filter_create('upgrade_accounts_email', 'upgrade_accounts', 'email', 10000); END $$;
INSERT INTO upgrade_accounts VALUES (1001, 'added-by-1.1@mail.com');
-- Configuration rows 1.1 let owners write directly, which 1.3 cannot keep current: a view, a
-- missing column. The update removes them (with a WARNING) instead of failing.
CREATE VIEW upgrade_view AS SELECT * FROM upgrade_accounts;
INSERT INTO bloom_filters VALUES ('upgrade_view', 'upgrade_view', 'email', 'text', 10, 0.01, 1, 10),
                                 ('upgrade_missing', 'upgrade_accounts', 'missing', 'text', 10, 0.01, 1, 10);
CREATE TEMP TABLE upgrade_shards_before AS
  SELECT shard, f::bytea AS bytes FROM bloom_filter_shards WHERE name = 'upgrade_accounts_email';
SET client_min_messages = error;
ALTER EXTENSION bloomfilter UPDATE TO '1.4';
RESET client_min_messages;
DO $$
BEGIN
  IF (SELECT array_agg(name ORDER BY name) FROM bloom_filters) <> ARRAY['upgrade_accounts_email'] THEN
    RAISE EXCEPTION 'the update kept configurations it cannot keep current';
  END IF;
  -- The 1.1 filter: same shards, byte for byte; its generated function and triggers are gone;
  -- bloom_filter_maintain keeps it current.
  IF EXISTS (SELECT 1 FROM upgrade_shards_before b LEFT JOIN bloom_filter_shards s
               ON s.name = 'upgrade_accounts_email' AND s.shard = b.shard
             WHERE s.f IS NULL OR s.f::bytea <> b.bytes)
     OR (SELECT count(*) FROM bloom_filter_shards WHERE name = 'upgrade_accounts_email')
        <> (SELECT count(*) FROM upgrade_shards_before) THEN
    RAISE EXCEPTION 'the update changed the shards of a maintained filter';
  END IF;
  IF EXISTS (SELECT 1 FROM pg_proc WHERE proname ~ '^bloom_filter_[0-9a-f]{32}_add$') THEN
    RAISE EXCEPTION 'a generated trigger function of 1.1 is left';
  END IF;
  IF (SELECT count(*) FROM pg_trigger WHERE tgrelid = 'upgrade_accounts'::regclass
        AND tgfoid = 'bloom_filter_maintain()'::regprocedure) <> 2
     OR (SELECT count(*) FROM pg_trigger WHERE tgrelid = 'upgrade_accounts'::regclass AND NOT tgisinternal) <> 2 THEN
    RAISE EXCEPTION 'the maintained filter does not have exactly its two bloom_filter_maintain triggers';
  END IF;
END $$;
INSERT INTO upgrade_accounts VALUES (1002, 'added-by-1.3@mail.com');
UPDATE upgrade_accounts SET email = 'renamed-by-1.3@mail.com' WHERE id = 1;
DO $$
BEGIN
  IF (SELECT count(*) FROM upgrade_accounts WHERE NOT bloom_filter_contains('upgrade_accounts_email', email)) <> 0 THEN
    RAISE EXCEPTION 'the converted filter misses rows';
  END IF;
  IF bloom_filter_contains('upgrade_accounts_email', 'ghost@mail.com') THEN
    RAISE EXCEPTION 'the converted filter answers wrong';
  END IF;
END $$;

-- 2.0: the filter is now the bloomfilter index upgrade_accounts_email on the same column, with
-- the filter's capacity; nothing of maintained filters is left.
ALTER EXTENSION bloomfilter UPDATE TO '2.1';
INSERT INTO upgrade_accounts VALUES (1003, 'added-by-2.0@mail.com');
DO $$
BEGIN
  IF (SELECT pg_get_indexdef('upgrade_accounts_email'::regclass))
     <> 'CREATE INDEX upgrade_accounts_email ON public.upgrade_accounts USING bloomfilter (email) WITH (capacity=''10000'', error_rate=''0.01'')' THEN
    RAISE EXCEPTION 'the maintained filter did not become the expected index: %', pg_get_indexdef('upgrade_accounts_email'::regclass);
  END IF;
  IF EXISTS (SELECT 1 FROM pg_proc WHERE proname LIKE 'bloom\_filter\_%')
     OR to_regclass('bloom_filters') IS NOT NULL OR to_regclass('bloom_filter_shards') IS NOT NULL
     OR EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = 'upgrade_accounts'::regclass AND NOT tgisinternal)
     OR EXISTS (SELECT 1 FROM pg_event_trigger) THEN
    RAISE EXCEPTION 'objects of maintained filters are left after the update to 2.0';
  END IF;
  IF (SELECT count(*) FROM upgrade_accounts WHERE NOT bloom_index_contains('upgrade_accounts_email', email)) <> 0 THEN
    RAISE EXCEPTION 'the index made from the maintained filter misses rows';
  END IF;
  IF bloom_index_contains('upgrade_accounts_email', 'ghost@mail.com') THEN
    RAISE EXCEPTION 'the index made from the maintained filter answers wrong';
  END IF;
END $$;
-- 2.2 makes an index without options grow; every index made before keeps its fixed size. At
-- 2.1, this library builds an index without options with a fixed size (1,000,000 keys).
CREATE SCHEMA "upgrade ""schema""";
CREATE TABLE "upgrade ""schema""".plain (k text);
INSERT INTO "upgrade ""schema""".plain SELECT 'k' || i FROM generate_series(1, 1000) i;
CREATE INDEX "plain k" ON "upgrade ""schema""".plain USING bloomfilter (k);
CREATE TABLE upgrade_parted (k bigint) PARTITION BY RANGE (k);
CREATE TABLE upgrade_parted_1 PARTITION OF upgrade_parted FOR VALUES FROM (0) TO (1000);
CREATE INDEX upgrade_parted_k ON upgrade_parted USING bloomfilter (k) WITH (capacity = 5000);
DO $$
BEGIN
  IF pg_relation_size('"upgrade ""schema"""."plain k"'::regclass) <> 1294336 THEN
    RAISE EXCEPTION 'at 2.1 an index without options is not of the fixed default size: % bytes',
      pg_relation_size('"upgrade ""schema"""."plain k"'::regclass);
  END IF;
END $$;
ALTER EXTENSION bloomfilter UPDATE;
-- The update gave every bloomfilter index expansion = 0 (a partitioned one too, whose new
-- partitions' indexes take its options); a REINDEX keeps each of fixed size (layout 1: no
-- full pages counted); a new index without options grows.
CREATE TABLE upgrade_parted_2 PARTITION OF upgrade_parted FOR VALUES FROM (1000) TO (2000);
REINDEX INDEX upgrade_accounts_email;
REINDEX INDEX "upgrade ""schema"""."plain k";
CREATE INDEX upgrade_new ON upgrade_accounts USING bloomfilter (email);
DO $$
DECLARE
  pinned text[] := ARRAY(
    SELECT c.relname || ':' || array_to_string(c.reloptions, ',')
    FROM pg_class c JOIN pg_am a ON a.oid = c.relam
    WHERE a.amname = 'bloomfilter' AND c.relname <> 'upgrade_new' ORDER BY c.relname COLLATE "C");
BEGIN
  IF pinned <> ARRAY['plain k:expansion=0',
                     'upgrade_accounts_email:capacity=10000,error_rate=0.01,expansion=0',
                     'upgrade_parted_1_k_idx:capacity=5000,expansion=0',
                     'upgrade_parted_2_k_idx:capacity=5000,expansion=0',
                     'upgrade_parted_k:capacity=5000,expansion=0'] THEN
    RAISE EXCEPTION 'the update did not give each index expansion = 0: %', pinned;
  END IF;
  IF (SELECT full_pages FROM bloom_index_layers('upgrade_accounts_email')) IS NOT NULL
     OR (SELECT full_pages FROM bloom_index_layers('"upgrade ""schema"""."plain k"')) IS NOT NULL
     OR (SELECT full_pages FROM bloom_index_layers('upgrade_parted_2_k_idx')) IS NOT NULL
     OR (SELECT capacity FROM bloom_index_layers('"upgrade ""schema"""."plain k"')) <> 1000000 THEN
    RAISE EXCEPTION 'an index made before 2.2 was rebuilt with layers';
  END IF;
  IF (SELECT full_pages FROM bloom_index_layers('upgrade_new')) IS NULL
     OR (SELECT reloptions FROM pg_class WHERE relname = 'upgrade_new') IS NOT NULL THEN
    RAISE EXCEPTION 'a new index without options does not grow';
  END IF;
  IF (SELECT count(*) FROM upgrade_accounts WHERE NOT bloom_index_contains('upgrade_accounts_email', email)
        OR NOT bloom_index_contains('upgrade_new', email)) <> 0 THEN
    RAISE EXCEPTION 'an index misses rows after the update to 2.2';
  END IF;
END $$;
DROP SCHEMA "upgrade ""schema""" CASCADE;
DROP TABLE upgrade_parted;
DROP VIEW upgrade_view;
DROP TABLE upgrade_accounts;
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
