-- Filters written in format version 1 (bloomfilter 1.0 and 1.1) keep working next to the
-- version 2 filters written now: same answers, on every storage path, and bloom_add keeps a
-- filter's version. A union of the two versions is refused.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS bloomfilter;
RESET client_min_messages;

\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/helpers.sql

-- The version byte (the 5th) of a filter.
CREATE FUNCTION pg_temp.version_of(f bloom) RETURNS int LANGUAGE sql AS
$$ SELECT get_byte(f::bytea, 4) $$;
-- An empty version 1 filter: version 2's header and zeroed blocks, with the version byte set to 1.
CREATE FUNCTION pg_temp.empty_v1(capacity bigint) RETURNS bloom LANGUAGE sql AS
$$ SELECT overlay(bloom_empty(capacity)::bytea PLACING '\x01' FROM 5)::bloom $$;

-- Written by bloomfilter 1.1: bloom_empty(100) with user0@mail.com .. user99@mail.com added.
CREATE TABLE v1_written (f bloom);
INSERT INTO v1_written VALUES ('\x424c4f4d010c07000100000064000000000000007b14ae47e17a843f64000000000000007078011002046802044000000c0020a480204000041010010000002020201088a24000801008104c0001c0c0900000000020100002014000008004940008980440060804000122410170400010c1404008411481000215800b024001a4101081018167090402813010210201001e0800803050104282001502020008a0040800000600000001d8100808411400c0052840004001600200088000801a0002022080000001404110400000080049870294a00140022014080008000008201209440800000030000040a0808020800808180500000000038201000704000020142400200084900000091010890222020028000a041874a402200034888092000410000040a02000200d0004418420d488302001205040000510080010086c0a0220800080c40000800c0310b15458010c8025421041002048608100008410402020002800020000001070102488004e0202092000045462244000002002300a9430e002000409008c0004004012200072200c20800130080282080088082001008810064120881045d200812230020c0491041442601c00201200030000001800723a10482017a00a000081004a10401200004400400010d061000c11000161b0480002103608400040708008804000000c0010100042022a04014026000040009224042001000141c06040001020065090001000019080000000c8000404000200');
SELECT pg_temp.version_of(f) AS version, inserted FROM v1_written, bloom_info(f);
SELECT count(*) FILTER (WHERE bloom_contains(f, 'user' || i || '@mail.com')) AS members_found,
       bool_or(bloom_contains(f, 'ghost@mail.com')) AS ghost_found
FROM v1_written, generate_series(0, 99) i;
-- The same keys added now to an empty version 1 filter give the very same bytes, so a version 1
-- filter maintained with bloom_add stays what 1.1 would have made of it.
SELECT bloom_add(pg_temp.empty_v1(100), ARRAY(SELECT 'user' || i || '@mail.com' FROM generate_series(0, 99) i))::bytea
       = f::bytea AS same_bytes_as_1_1,
       pg_temp.version_of(bloom_add(f, 'new@mail.com')) AS version_after_add
FROM v1_written;
SELECT bloom_contains(f, ARRAY['user7@mail.com', 'ghost@mail.com', NULL]) FROM v1_written;

-- New filters are version 2, from every constructor.
SELECT pg_temp.version_of(bloom_empty(100)) AS bloom_empty,
       pg_temp.version_of(bloom_agg(k)) AS bloom_agg,
       pg_temp.version_of(bloom_agg(k, 1000, 0.01)) AS bloom_agg_sized,
       pg_temp.version_of(bloom_union_agg(bloom_add(bloom_empty(10), k))) AS bloom_union_agg
FROM (VALUES ('a'), ('b')) v(k);

-- Both versions, stored out of line (slice reads), inline, and compressed, with 3000 members.
CREATE TABLE both_versions (id int PRIMARY KEY, version int, kind text, f bloom);
INSERT INTO both_versions
SELECT id, v, kind,
       bloom_add(CASE v WHEN 1 THEN pg_temp.empty_v1(capacity) ELSE bloom_empty(capacity) END,
                 ARRAY(SELECT 'user' || i || '@mail.com' FROM generate_series(1, keys) i))
FROM (VALUES (1, 1, 'external', 3000, 3000), (2, 2, 'external', 3000, 3000),
             (3, 1, 'inline', 20, 20), (4, 2, 'inline', 20, 20)) c(id, v, kind, capacity, keys);
CREATE TABLE both_versions_compressed (id int PRIMARY KEY, version int, kind text, f bloom);
ALTER TABLE both_versions_compressed ALTER COLUMN f SET STORAGE extended;
INSERT INTO both_versions_compressed
SELECT id, v, 'compressed',
       bloom_add(CASE v WHEN 1 THEN pg_temp.empty_v1(500000) ELSE bloom_empty(500000) END,
                 ARRAY(SELECT 'user' || i || '@mail.com' FROM generate_series(1, 20) i))
FROM (VALUES (5, 1), (6, 2)) c(id, v);
SELECT id, version, kind, pg_temp.version_of(f) = version AS version_kept
FROM (SELECT * FROM both_versions UNION ALL SELECT * FROM both_versions_compressed) s ORDER BY id;

-- Point lookups, one statement each, so the out-of-line ones take the slice path, over both
-- versions in turn.
DO $$
DECLARE missing int := 0; present int := 0; b bool; fid int; members int;
BEGIN
  FOR round IN 1..2 LOOP
    FOR fid IN SELECT unnest(ARRAY[1, 2, 1, 3, 4, 5, 6, 2]) LOOP
      members := CASE WHEN fid <= 2 THEN 3000 ELSE 20 END;
      FOR i IN 1..members BY 7 LOOP
        EXECUTE 'SELECT bloom_contains(f, $1) FROM (SELECT * FROM both_versions UNION ALL SELECT * FROM both_versions_compressed) s WHERE id = $2'
          INTO b USING 'user' || i || '@mail.com', fid;
        IF NOT b THEN missing := missing + 1; END IF;
      END LOOP;
      EXECUTE 'SELECT bloom_contains(f, $1) FROM (SELECT * FROM both_versions UNION ALL SELECT * FROM both_versions_compressed) s WHERE id = $2'
        INTO b USING 'ghost@mail.com', fid;
      IF b THEN present := present + 1; END IF;
    END LOOP;
  END LOOP;
  RAISE NOTICE 'point lookups: % members missing, ghost present in % of 16 checks', missing, present;
END $$;
-- A backend fetches a value's header together with the block a version 2 filter would use,
-- unless it has seen that value to be version 1. So the first lookup in each of 60 version 1
-- values (same keys, separate TOAST values) finds the header says otherwise and must fetch again.
CREATE TABLE many_v1 (id int PRIMARY KEY, f bloom);
INSERT INTO many_v1
SELECT id, bloom_add(pg_temp.empty_v1(3000), ARRAY(SELECT 'user' || i || '@mail.com' FROM generate_series(1, 3000) i))
FROM generate_series(1, 60) id;
DO $$
DECLARE n bigint;
BEGIN
  EXECUTE format('SELECT count(DISTINCT chunk_id) FROM %s',
                 (SELECT reltoastrelid::regclass FROM pg_class WHERE oid = 'many_v1'::regclass)) INTO n;
  RAISE NOTICE 'version 1 values stored out of line: %', n;
END $$;
DO $$
DECLARE missing int := 0; b bool;
BEGIN
  FOR fid IN 1..60 LOOP
    EXECUTE 'SELECT bloom_contains(f, $1) FROM many_v1 WHERE id = $2' INTO b USING 'user' || (fid * 37) || '@mail.com', fid;
    IF NOT b THEN missing := missing + 1; END IF;
  END LOOP;
  RAISE NOTICE 'first lookups in 60 version 1 values: % members missing', missing;
END $$;
-- Batch checks (each filter read whole once) agree.
SELECT id, version, count(*) FILTER (WHERE bloom_contains(f, 'user' || i || '@mail.com')) AS members_found
FROM (SELECT * FROM both_versions UNION ALL SELECT * FROM both_versions_compressed) s,
     generate_series(1, CASE WHEN id <= 2 THEN 3000 ELSE 20 END) i
GROUP BY id, version ORDER BY id;
-- Same keys, different versions: different bits.
SELECT a.f::bytea <> b.f::bytea AS bits_differ FROM both_versions a, both_versions b WHERE a.id = 1 AND b.id = 2;

-- A union needs one version; the error says which and how to get there.
SELECT pg_temp.error_of($$SELECT bloom_union(bloom_empty(100), pg_temp.empty_v1(100))$$);
SELECT pg_temp.error_of($$SELECT bloom_union_agg(f) FROM (VALUES (bloom_empty(100)), (pg_temp.empty_v1(100))) v(f)$$);
SELECT pg_temp.version_of(bloom_union(f, bloom_add(pg_temp.empty_v1(100), 'x'))) AS v1_union_v1,
       bloom_contains(bloom_union(f, bloom_add(pg_temp.empty_v1(100), 'x')), 'x') AS x_found
FROM v1_written;
-- With its hint.
SELECT bloom_union(bloom_empty(100), pg_temp.empty_v1(100));
