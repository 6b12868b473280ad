-- Every function and overload, NULLs and empty inputs.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS bloomfilter;
RESET client_min_messages;

-- bloom_empty: default error rate 1%, sized by the article's formulas.
SELECT capacity, error_rate, bits, hashes, bytes, inserted, bits_set, fill, estimated_count,
       estimated_error_rate
FROM bloom_info(bloom_empty(1000));
SELECT capacity, error_rate, bits, hashes FROM bloom_info(bloom_empty(1000000, 0.001));
SELECT capacity, error_rate, bits, hashes FROM bloom_info(bloom_empty(1, 0.5));

-- Text keys, one and many.
CREATE TEMP TABLE f AS SELECT bloom_add(bloom_empty(100), 'alice@mail.com'::text) AS f;
SELECT bloom_contains(f, 'alice@mail.com') AS alice, bloom_contains(f, 'bob@mail.com') AS bob FROM f;
SELECT bloom_contains(bloom_add(f, ARRAY['bob@mail.com', NULL, 'carol@mail.com']),
                      ARRAY['alice@mail.com', 'bob@mail.com', NULL, 'carol@mail.com', 'dave@mail.com'])
FROM f;
-- The array's shape is kept.
SELECT bloom_contains(f, ARRAY[['alice@mail.com', 'x'], ['y', 'alice@mail.com']]) FROM f;
SELECT bloom_contains(f, '{}'::text[]) AS empty_array FROM f;
SELECT inserted FROM f, bloom_info(bloom_add(f, ARRAY['bob@mail.com', NULL, 'carol@mail.com']));

-- Text is hashed as its exact bytes: case matters, and so does every byte.
SELECT bloom_contains(f, 'Alice@mail.com') AS different_case, bloom_contains(f, 'alice@mail.com ') AS trailing_space
FROM f;
-- To follow a unique index on lower(email), add and check lower(email).
SELECT bloom_contains(bloom_add(bloom_empty(100), lower('Alice@Mail.com')), lower('ALICE@mail.COM'))
  AS lower_matches;
-- text and bytea hash the same bytes.
SELECT bloom_contains(f, convert_to('alice@mail.com', 'UTF8')) AS bytea_of_text FROM f;

-- NULLs: adding NULL returns the filter unchanged, a NULL filter stays NULL, checking NULL is NULL.
SELECT bloom_add(f, NULL::text) = f AS add_null_unchanged,
       bloom_add(f, NULL::text[]) = f AS add_null_array_unchanged,
       bloom_add(f, ARRAY[NULL, NULL]::text[]) = f AS add_all_null_elements_unchanged,
       bloom_add(f, '{}'::text[]) = f AS add_empty_array_unchanged,
       bloom_add(NULL::bloom, 'x'::text) IS NULL AS add_to_null,
       bloom_contains(f, NULL::text) IS NULL AS contains_null,
       bloom_contains(NULL::bloom, 'x'::text) IS NULL AS null_filter
FROM f;

-- Inputs are never modified.
SELECT f = (SELECT bloom_add(bloom_empty(100), 'alice@mail.com'::text)) AS input_unchanged
FROM (SELECT f, bloom_add(f, 'zed@mail.com'::text) AS g FROM f) s;

-- The empty string is a key like any other.
SELECT bloom_contains(bloom_add(bloom_empty(10), ''::text), ''::text) AS empty_string,
       bloom_contains(bloom_empty(10), ''::text) AS empty_string_absent;

-- bytea, bigint and uuid keys.
SELECT bloom_contains(g, '\x00ff'::bytea) AS bytea_present, bloom_contains(g, '\x00'::bytea) AS bytea_absent,
       bloom_contains(g, ARRAY['\x00ff'::bytea, '\x01'::bytea]) AS bytea_array
FROM (SELECT bloom_add(bloom_empty(100), ARRAY['\x00ff'::bytea]) AS g) s;
SELECT bloom_contains(g, 42::bigint) AS present, bloom_contains(g, 43::bigint) AS absent,
       bloom_contains(g, '-9223372036854775808'::bigint) AS min_present,
       bloom_contains(g, ARRAY[42, 0, 9223372036854775807]::bigint[]) AS array_check
FROM (SELECT bloom_add(bloom_add(bloom_empty(100), 42::bigint), ARRAY['-9223372036854775808', '9223372036854775807']::bigint[]) AS g) s;
-- bigint is hashed as 8 little-endian bytes.
SELECT bloom_contains(bloom_add(bloom_empty(100), 1::bigint), '\x0100000000000000'::bytea) AS int8_bytes;
SELECT bloom_contains(g, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid) AS present,
       bloom_contains(g, '00000000-0000-0000-0000-000000000000'::uuid) AS absent,
       bloom_contains(g, ARRAY['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid, NULL]) AS array_check
FROM (SELECT bloom_add(bloom_empty(100), 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid) AS g) s;
-- uuid is hashed as its 16 bytes in RFC 4122 order.
SELECT bloom_contains(bloom_add(bloom_empty(100), 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid),
                      '\xa0eebc999c0b4ef8bb6d6bb9bd380a11'::bytea) AS uuid_bytes;

-- Union and the | operator.
SELECT bloom_contains(u, 'a') AS a, bloom_contains(u, 'b') AS b, bloom_contains(u, 'c') AS c,
       (SELECT inserted FROM bloom_info(u)) AS inserted
FROM (SELECT bloom_union(bloom_add(bloom_empty(100), 'a'::text), bloom_add(bloom_empty(100), 'b'::text)) AS u) s;
SELECT (bloom_add(bloom_empty(100), 'a'::text) | bloom_add(bloom_empty(100), 'b'::text))
     = bloom_add(bloom_empty(100), ARRAY['b', 'a']) AS operator_equals_union;
SELECT bloom_union(bloom_empty(100), NULL) IS NULL AS union_with_null;

-- bloom_info on a filled filter.
SELECT capacity, inserted, bits_set > 0 AS some_bits, fill > 0 AND fill < 1 AS fill_in_range,
       round(estimated_count) AS estimated_count, estimated_error_rate < 0.01 AS under_target
FROM bloom_info(bloom_add(bloom_empty(1000), ARRAY(SELECT 'k' || i FROM generate_series(1, 500) i)));

-- bloom_shard: stable, in range, even.
SELECT bloom_shard('user7@mail.com'::text, 64) AS shard_of_user7,
       bloom_shard('user7@mail.com'::text, 64) = bloom_shard(convert_to('user7@mail.com', 'UTF8'), 64) AS text_equals_bytea,
       bloom_shard(42::bigint, 1) AS single_shard,
       bloom_shard('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid, 8) AS uuid_shard;
SELECT min(s) AS lowest, max(s) AS highest, min(n) > 1400 AND max(n) < 1725 AS even_spread
FROM (SELECT bloom_shard('user' || i || '@mail.com', 64) AS s, count(*) AS n
      FROM generate_series(1, 100000) i GROUP BY 1) x;

-- Equality is byte identity.
SELECT bloom_empty(100) = bloom_empty(100) AS same, bloom_empty(100) = bloom_empty(101) AS different;

-- The way this process checks a filter's bits: one of the three, whichever the CPU runs fastest.
SELECT bloom_check_path() IN ('scalar', 'avx2', 'avx512') AS known_check_path;
