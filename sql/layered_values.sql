-- Layered values (format version 3, docs/format.md): the filter of an index that grows, read
-- whole by bloom_index_filter with every layer, checked by bloom_contains, described by
-- bloom_info, refused by what writes one filter, validated on every way in, and followed by
-- bloom_index_changes across the addition of layers.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS bloomfilter;
RESET client_min_messages;

\getenv abs_srcdir PG_ABS_SRCDIR
\i :abs_srcdir/sql/include/helpers.sql

CREATE TABLE lv_users (id bigserial PRIMARY KEY, email text NOT NULL);
CREATE INDEX lv_users_email ON lv_users USING bloomfilter (email)
  WITH (capacity = 1000, error_rate = 0.01, expansion = 2);

-- One layer: a layered value all the same. Its header (magic, version 3, a zero byte, the layer
-- count, expansion, capacity, error_rate, inserted), then layer 0, a version 2 filter at half
-- the rate.
SELECT octet_length(f::bytea) AS bytes, substring(f::bytea FOR 36) AS header,
       substring(f::bytea FROM 37 FOR 36) AS layer_0
FROM (SELECT bloom_index_filter('lv_users_email') AS f) v;

-- A follower as the clients' (clients/python/bloomfilter/follow.py): a copy of the value and
-- the WAL position it is as of; each refresh applies bloom_index_changes, or reads the value
-- whole when the header's first 28 bytes differ from the copy's (other parameters, or another
-- number of layers).
CREATE TEMP TABLE follower (copy bytea, lsn pg_lsn, reloads int);
CREATE FUNCTION pg_temp.follow_start() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM follower;
  INSERT INTO follower VALUES (NULL, pg_current_wal_insert_lsn(), 0);
  UPDATE follower SET copy = bloom_index_filter('lv_users_email')::bytea;
END $$;
CREATE FUNCTION pg_temp.follow_refresh() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  r record;
  c bytea;
  since pg_lsn;
  next pg_lsn;
BEGIN
  SELECT copy, lsn INTO c, since FROM follower;
  FOR r IN SELECT * FROM bloom_index_changes('lv_users_email', since) ORDER BY byte_offset LOOP
    IF r.byte_offset = 0 AND substring(r.bytes FOR 28) <> substring(c FOR 28) THEN
      UPDATE follower SET lsn = pg_current_wal_insert_lsn(), reloads = reloads + 1;
      UPDATE follower SET copy = bloom_index_filter('lv_users_email')::bytea;
      RETURN 'read whole';
    END IF;
    c := overlay(c PLACING r.bytes FROM r.byte_offset::int + 1);
    next := r.next_lsn;
  END LOOP;
  UPDATE follower SET copy = c, lsn = next;
  RETURN 'changes applied';
END $$;
-- Its answers: the committed keys it misses, and whether it equals the index's value now.
CREATE FUNCTION pg_temp.follower_state(OUT layers int, OUT false_negatives bigint, OUT same bool)
LANGUAGE sql AS $$
  SELECT get_byte(f.copy, 6),
         (SELECT count(*) FROM lv_users WHERE NOT bloom_contains(f.copy::bloom, email)),
         f.copy = bloom_index_filter('lv_users_email')::bytea
  FROM follower f
$$;

SELECT pg_temp.follow_start();
INSERT INTO lv_users (email) SELECT 'user' || i || '@mail.com' FROM generate_series(1, 300) i;
SELECT pg_temp.follow_refresh();
SELECT * FROM pg_temp.follower_state();
-- Past layer 0's capacity: new layers, which the header's layer count shows.
INSERT INTO lv_users (email) SELECT 'user' || i || '@mail.com' FROM generate_series(301, 9000) i;
SELECT count(*) AS index_layers FROM bloom_index_layers('lv_users_email');
SELECT pg_temp.follow_refresh();
SELECT * FROM pg_temp.follower_state();
-- Then changes again, in the newest layer and in an older one (a key whose bits an insert
-- sets there is written where it lands).
INSERT INTO lv_users (email) SELECT 'more' || i || '@mail.com' FROM generate_series(1, 200) i;
SELECT pg_temp.follow_refresh();
SELECT * FROM pg_temp.follower_state();
-- The rows: the header first, then each changed page at its place in the value, inside the
-- value and past the header of the layer it belongs to.
SELECT bool_and(c.byte_offset + octet_length(c.bytes) <= octet_length(f.copy)) AS inside,
       count(*) FILTER (WHERE c.byte_offset = 0) AS headers
FROM bloom_index_changes('lv_users_email', '0/0') c, follower f;

-- bloom_contains on the value: any layer; text and bytea keys alike; arrays; NULL elements.
SELECT bloom_contains(f, 'user7@mail.com'::text) AS user7,
       bloom_contains(f, 'ghost@mail.com'::text) AS ghost,
       bloom_contains(f, convert_to('user8999@mail.com', 'UTF8')) AS bytea_key,
       bloom_contains(f, ARRAY['user1@mail.com', NULL, 'user9000@mail.com', 'ghost@mail.com']) AS many
FROM (SELECT bloom_index_filter('lv_users_email') AS f) v;
-- Its rate over 100,000 absent keys: under error_rate (0.01; 1,150 is more than four standard
-- deviations above 1,000).
SELECT count(*) FILTER (WHERE bloom_contains(v.f, 'ghost' || i || '@mail.com')) < 1150 AS rate_within
FROM generate_series(1, 100000) i, (SELECT bloom_index_filter('lv_users_email') AS f) v;

-- Stored in a table (out of line, uncompressed: a single check reads slices of a filter of one
-- layer; a layered value is read whole) and checked row by row.
CREATE TABLE lv_stored (f bloom);
INSERT INTO lv_stored SELECT bloom_index_filter('lv_users_email');
SELECT bloom_contains(f, 'user4242@mail.com'::text) AS stored_single FROM lv_stored;
SELECT count(*) AS stored_false_negatives FROM lv_users, lv_stored WHERE NOT bloom_contains(lv_stored.f, email);
-- Through text and the bytea cast, unchanged.
SELECT f::text::bloom = f AS text_round_trip, f::bytea::bloom = f AS bytea_round_trip FROM lv_stored;

-- bloom_info: the layers' capacities and bits summed, no one number of hashes (NULL), the rate
-- of a key absent from every layer.
SELECT i.capacity = (SELECT sum(capacity) FROM bloom_index_layers('lv_users_email')) AS capacity_summed,
       i.error_rate, i.hashes,
       i.bits = (SELECT sum(8 * (bytes - 36)) FROM bloom_index_layers('lv_users_email')) AS bits_summed,
       i.bytes = octet_length(f::bytea) + 4 AS bytes,
       round((i.estimated_count / 9200)::numeric, 1) AS estimated_over_rows,
       i.estimated_error_rate < 0.01 AS estimated_within
FROM lv_stored, bloom_info(f) i;

-- What writes one filter refuses a layered value (0A000), with nothing answered wrong.
SELECT pg_temp.error_of($$SELECT bloom_add(f, 'x'::text) FROM lv_stored$$);
SELECT pg_temp.error_of($$SELECT bloom_add(f, ARRAY['x', 'y']) FROM lv_stored$$);
SELECT pg_temp.error_of($$SELECT bloom_union(f, f) FROM lv_stored$$);
SELECT pg_temp.error_of($$SELECT f | bloom_empty(1000) FROM lv_stored$$);
SELECT pg_temp.error_of($$SELECT bloom_union_agg(f) FROM lv_stored$$);

-- Validation, on the bytea cast (22P03) and text input (22P02): each a change to a value of one
-- layer at capacity 10.
CREATE TABLE lv_small (k text);
CREATE INDEX lv_small_k ON lv_small USING bloomfilter (k) WITH (capacity = 10, expansion = 2);
INSERT INTO lv_small VALUES ('a'), ('b');
CREATE TEMP TABLE lv_good AS SELECT bloom_index_filter('lv_small_k')::bytea AS v;
SELECT octet_length(v) AS good_bytes, v::bloom IS NOT NULL AS good_valid FROM lv_good;
CREATE TEMP TABLE lv_bad (what text, v bytea);
INSERT INTO lv_bad SELECT w, b FROM lv_good, LATERAL (VALUES
  ('byte 5 not zero', set_byte(v, 5, 1)),
  ('no layer', set_byte(v, 6, 0)),
  ('33 layers', set_byte(v, 6, 33)),
  ('2 layers in the length of one', set_byte(v, 6, 2)),
  ('expansion 1', set_byte(v, 8, 1)),
  ('expansion 1025', set_byte(set_byte(v, 8, 1), 9, 4)),
  ('capacity 0', overlay(v PLACING '\x0000000000000000'::bytea FROM 13)),
  ('error_rate 0', overlay(v PLACING '\x0000000000000000'::bytea FROM 21)),
  ('error_rate 1', overlay(v PLACING '\x000000000000f03f'::bytea FROM 21)),
  ('layer 0 version 1', set_byte(v, 40, 1)),
  ('layer 0 capacity 11', set_byte(v, 48, 11)),
  ('layer 0 hashes 7', set_byte(v, 42, 7)),
  ('one byte less', substring(v FOR octet_length(v) - 1)),
  ('one byte more', v || '\x00'::bytea),
  ('header only', substring(v FOR 36)),
  ('layer 0 inserted 2^64 - 1 (valid)', overlay(v PLACING '\xffffffffffffffff'::bytea FROM 65)),
  ('inserted 2^64 - 1 (valid)', overlay(v PLACING '\xffffffffffffffff'::bytea FROM 29))
) AS bad(w, b);
SELECT what, pg_temp.error_of(format('SELECT %L::bytea::bloom', v)) AS bytea_cast,
       left(pg_temp.error_of(format('SELECT %L::bloom', '\x' || encode(v, 'hex'))), 5) AS text_in
FROM lv_bad ORDER BY what;

DROP TABLE lv_users, lv_stored, lv_small;
