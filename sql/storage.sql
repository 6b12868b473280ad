-- Every storage path gives the same answers: out of line uncompressed (slice reads), inline, and
-- compressed; and batch checks of one stored filter.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS bloomfilter;
RESET client_min_messages;

CREATE TABLE stored (id int PRIMARY KEY, kind text, f bloom);
-- Out of line, uncompressed (STORAGE external, the type's default): about 120 KB.
INSERT INTO stored SELECT 1, 'external', bloom_agg('user' || i || '@mail.com') FROM generate_series(1, 100000) i;
-- Inline: a 548-byte filter stays in the row.
INSERT INTO stored SELECT 2, 'inline', bloom_agg('user' || i || '@mail.com') FROM generate_series(1, 20) i;
SELECT attname, attstorage FROM pg_attribute WHERE attrelid = 'stored'::regclass AND attname = 'f';

CREATE TABLE stored_compressed (id int PRIMARY KEY, kind text, f bloom);
ALTER TABLE stored_compressed ALTER COLUMN f SET STORAGE extended;
-- Sparse filters (20 keys) compress well: 120 KB compresses into the row, 6 MB goes out of line
-- compressed.
INSERT INTO stored_compressed
SELECT 3, 'compressed inline', bloom_add(bloom_empty(100000), ARRAY(SELECT 'user' || i || '@mail.com' FROM generate_series(1, 20) i));
INSERT INTO stored_compressed
SELECT 4, 'compressed external', bloom_add(bloom_empty(5000000), ARRAY(SELECT 'user' || i || '@mail.com' FROM generate_series(1, 20) i));

-- Stored size against the value's size, and compression.
SELECT id, kind, pg_column_size(f) >= (SELECT bytes FROM bloom_info(f)) - 4 AS stored_uncompressed,
       pg_column_size(f) < (SELECT bytes FROM bloom_info(f)) / 10 AS stored_compressed,
       pg_column_compression(f) IS NOT NULL AS compressed
FROM (SELECT * FROM stored UNION ALL SELECT * FROM stored_compressed) s ORDER BY id;
-- Which values live in the TOAST tables: the external and compressed external ones.
CREATE FUNCTION pg_temp.toasted_values(rel regclass) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
  EXECUTE format('SELECT count(DISTINCT chunk_id) FROM %s',
                 (SELECT reltoastrelid::regclass FROM pg_class WHERE oid = rel)) INTO n;
  RETURN n;
END $$;
SELECT pg_temp.toasted_values('stored') AS stored_toasted, pg_temp.toasted_values('stored_compressed') AS compressed_toasted;

-- Point lookups on each path: present keys found, absent ones (with this data) not.
SELECT id, kind, bloom_contains(f, 'user7@mail.com') AS user7, bloom_contains(f, 'user20@mail.com') AS user20,
       bloom_contains(f, 'ghost@mail.com') AS ghost
FROM stored ORDER BY id;
SELECT id, kind, bloom_contains(f, 'user7@mail.com') AS user7, bloom_contains(f, 'ghost@mail.com') AS ghost
FROM stored_compressed ORDER BY id;
-- Prepared, as an application runs it: each execution starts with no cache.
PREPARE check_email(text) AS SELECT bloom_contains(f, $1) FROM stored WHERE id = 1;
EXECUTE check_email('user99999@mail.com');
EXECUTE check_email('user100001@mail.com');
EXECUTE check_email('user1@mail.com');

-- Batch: one stored filter checked for many rows (read once, then cached), on each path.
SELECT s.kind, count(*) FILTER (WHERE bloom_contains(s.f, 'user' || i || '@mail.com')) AS found
FROM (SELECT * FROM stored UNION ALL SELECT * FROM stored_compressed) s, generate_series(1, 100000) i
GROUP BY s.kind ORDER BY s.kind;
SELECT count(*) AS false_negatives
FROM stored s, generate_series(1, 100000) i WHERE s.id = 1 AND NOT bloom_contains(s.f, 'user' || i || '@mail.com');
-- Two different stored filters alternating in one statement.
SELECT count(*) FILTER (WHERE bloom_contains(s.f, 'user' || i || '@mail.com')) AS found
FROM generate_series(1, 30) i, stored s;
-- Arrays and a filter from a subquery.
SELECT bloom_contains((SELECT f FROM stored WHERE id = 1), ARRAY['user1@mail.com', 'ghost@mail.com', 'user100000@mail.com']);
SELECT bloom_contains(f, ARRAY['user1@mail.com', 'ghost@mail.com']) FROM stored ORDER BY id;

-- Updates keep every stored path valid.
UPDATE stored SET f = bloom_add(f, 'new@mail.com'::text);
UPDATE stored_compressed SET f = bloom_add(f, 'new@mail.com'::text);
SELECT kind, bloom_contains(f, 'new@mail.com') AS new, bloom_contains(f, 'user7@mail.com') AS user7
FROM (SELECT * FROM stored UNION ALL SELECT * FROM stored_compressed) s ORDER BY id;

-- Point lookups each in their own statement (no statement cache): the slice path, for the usual
-- 4096-bit blocks and for larger ones.
CREATE TABLE stored_rates (id int PRIMARY KEY, f bloom);
INSERT INTO stored_rates SELECT 1, bloom_agg('user' || i || '@mail.com', 20000, 0.01) FROM generate_series(1, 20000) i;
INSERT INTO stored_rates SELECT 2, bloom_agg('user' || i || '@mail.com', 20000, 0.001) FROM generate_series(1, 20000) i;
-- error_rate 1e-9: 30 hashes, 64 KB blocks, each spanning many TOAST chunks.
INSERT INTO stored_rates SELECT 3, bloom_agg('user' || i || '@mail.com', 20000, 1e-9) FROM generate_series(1, 20000) i;
SELECT id, hashes, get_byte(f::bytea, 5) AS block_log2 FROM stored_rates, bloom_info(f) ORDER BY id;
DO $$
DECLARE
  found boolean;
  missing int := 0;
  false_positives int := 0;
BEGIN
  FOR filter_id IN 1..3 LOOP
    FOR i IN 1..2000 LOOP
      SELECT bloom_contains(f, 'user' || (i * 10) || '@mail.com') INTO found FROM stored_rates WHERE id = filter_id;
      IF NOT found THEN missing := missing + 1; END IF;
      SELECT bloom_contains(f, 'ghost' || i || '@mail.com') INTO found FROM stored_rates WHERE id = filter_id;
      IF found THEN false_positives := false_positives + 1; END IF;
    END LOOP;
  END LOOP;
  RAISE NOTICE 'point lookups: % of 6000 members missing, % of 6000 outsiders present', missing, false_positives;
END $$;
-- One point lookup on a 1.2 MB filter (1,000,000 emails at 1%) reads two or three TOAST pages
-- (the header's and the block's), not the whole value.
CREATE TABLE lookup_filters (id int PRIMARY KEY, f bloom NOT NULL);
INSERT INTO lookup_filters VALUES (1, bloom_add(bloom_empty(1000000, 0.01), 'user77@mail.com'::text));
SELECT pg_stat_force_next_flush();
SELECT toast_blks_read + toast_blks_hit AS toast_pages_before FROM pg_statio_user_tables WHERE relname = 'lookup_filters' \gset
SELECT bloom_contains(f, 'user77@mail.com') FROM lookup_filters WHERE id = 1;
SELECT pg_stat_force_next_flush();
SELECT pg_stat_clear_snapshot();
SELECT s.toast_blks_read + s.toast_blks_hit - :toast_pages_before <= 3 AS at_most_three_pages,
       pg_relation_size(reltoastrelid) / 8192 AS pages_of_the_filter
FROM pg_statio_user_tables s JOIN pg_class c ON c.oid = s.relid WHERE s.relname = 'lookup_filters';

-- The same lookup again in this session: the two TOAST chunks come straight from the heap pages
-- where the first lookup found them, with no TOAST index page read.
SELECT pg_stat_force_next_flush();
SELECT toast_blks_read + toast_blks_hit AS heap_before, tidx_blks_read + tidx_blks_hit AS index_before
FROM pg_statio_user_tables WHERE relname = 'lookup_filters' \gset
SELECT bloom_contains(f, 'user77@mail.com') FROM lookup_filters WHERE id = 1;
SELECT pg_stat_force_next_flush();
SELECT pg_stat_clear_snapshot();
SELECT toast_blks_read + toast_blks_hit - :heap_before AS toast_heap_pages,
       tidx_blks_read + tidx_blks_hit - :index_before AS toast_index_pages
FROM pg_statio_user_tables WHERE relname = 'lookup_filters';

-- Remembered chunk places go stale when the TOAST table is rewritten: VACUUM FULL keeps the
-- value ids but moves the chunks. Lookups then find another value's chunk, or a page past the
-- end of the shortened table, at the remembered place, and must fall back to the index and stay
-- right.
CREATE TABLE moving (id int PRIMARY KEY, note text, f bloom);
INSERT INTO moving SELECT 1, 'first', bloom_agg('a' || i) FROM generate_series(1, 100000) i;
INSERT INTO moving SELECT 2, 'second', bloom_agg('b' || i) FROM generate_series(1, 100000) i;
-- Members of filter `filter_id` (keys prefix || n) not found, over 3000 point lookups, each its
-- own statement (SELECT INTO), so each takes the slice path.
CREATE FUNCTION pg_temp.moving_misses(filter_id int, prefix text) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
  found boolean;
  missing int := 0;
BEGIN
  FOR i IN 1..3000 LOOP
    SELECT bloom_contains(f, prefix || (i * 33)) INTO STRICT found FROM moving WHERE id = filter_id;
    IF NOT found THEN missing := missing + 1; END IF;
  END LOOP;
  RETURN missing;
END $$;
-- The TOAST value ids of moving, as one sorted list.
CREATE FUNCTION pg_temp.moving_value_ids() RETURNS text LANGUAGE plpgsql AS $$
DECLARE ids text;
BEGIN
  EXECUTE format('SELECT string_agg(DISTINCT chunk_id::text, '','') FROM %s',
                 (SELECT reltoastrelid::regclass FROM pg_class WHERE relname = 'moving')) INTO ids;
  RETURN ids;
END $$;
SELECT pg_temp.moving_misses(1, 'a') AS misses_1, pg_temp.moving_misses(2, 'b') AS misses_2;
SELECT pg_temp.moving_value_ids() AS ids_before \gset
-- Row 1 gets a new version at the end of the table, so VACUUM FULL copies row 2 and its chunks
-- first: each filter's chunks land where the other's were.
UPDATE moving SET note = 'first, updated' WHERE id = 1;
VACUUM FULL moving;
SELECT pg_temp.moving_value_ids() = :'ids_before' AS same_value_ids;
SELECT pg_temp.moving_misses(1, 'a') AS misses_1, pg_temp.moving_misses(2, 'b') AS misses_2;
-- Without row 2, filter 1 moves to the start of a TOAST table half as long: its remembered
-- places are past the end.
SELECT pg_relation_size(reltoastrelid) AS toast_bytes_before FROM pg_class WHERE relname = 'moving' \gset
DELETE FROM moving WHERE id = 2;
VACUUM FULL moving;
SELECT pg_relation_size(reltoastrelid) < :toast_bytes_before / 2 + 16384 AS toast_table_halved
FROM pg_class WHERE relname = 'moving';
SELECT pg_temp.moving_misses(1, 'a') AS misses_1;
