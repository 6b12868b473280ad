-- An index that grows: WITH (expansion = N) adds a layer N times larger when the newest one is
-- full, at half its error rate, so that no key is ever missing and the whole index keeps its
-- error rate; a check reads every layer. Without options an index grows (expansion = 2), its
-- first layer sized from the rows.

SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS bloomfilter;
RESET client_min_messages;

CREATE TABLE growth_users (id bigserial PRIMARY KEY, email text NOT NULL);
CREATE INDEX growth_users_email ON growth_users USING bloomfilter (email)
  WITH (capacity = 1000, error_rate = 0.01, expansion = 2);
SELECT layer, capacity, error_rate, pages, full_pages FROM bloom_index_layers('growth_users_email');

-- 60 times the first layer's capacity, in batches of one statement each.
INSERT INTO growth_users (email) SELECT 'user' || i || '@mail.com' FROM generate_series(1, 30000) i;
INSERT INTO growth_users (email) SELECT 'user' || i || '@mail.com' FROM generate_series(30001, 60000) i;
-- Layers of 1000, 2000, 4000, ... keys at 0.005, 0.0025, ...: six hold 63,000.
SELECT layer, capacity, error_rate, bytes, pages, full_pages >= 0 AS counted,
       fill < 0.6 AS not_overfull
FROM bloom_index_layers('growth_users_email') ORDER BY layer;
-- No key missing, and verify agrees: it checks each row's key in every layer (one it skipped
-- would make it raise XX002 for the rows whose keys only that layer holds).
SELECT count(*) AS false_negatives FROM growth_users
WHERE NOT bloom_index_contains('growth_users_email', email);
SELECT bloom_index_verify('growth_users_email') = count(*) AS verified FROM growth_users;
-- bloom_index_info sums the layers: their capacities, the estimated count (about the rows), the
-- rate of a key absent from every layer; advice 'compact' (a check reads 6 pages, 1 after REINDEX).
SELECT capacity, error_rate, hashes, layers, needs_rebuild, advice,
       abs(estimated_count - 60000) < 600 AS count_within_1pct,
       estimated_error_rate < 0.01 AS rate_within, fill < 0.6 AS fill_below
FROM bloom_index_info('growth_users_email');
SELECT i.bits = sum(l.bytes - 36) * 8 AS bits_summed, i.bytes = 4 + 36 + sum(l.bytes) AS bytes_of_value
FROM bloom_index_info('growth_users_email') i, bloom_index_layers('growth_users_email') l
GROUP BY i.bits, i.bytes;
-- The rate over 100,000 absent keys stays under error_rate (0.01; the expected count is at
-- most 1,000, and 1,150 is more than four standard deviations above it).
SELECT count(*) FILTER (WHERE bloom_index_contains('growth_users_email', 'ghost' || i || '@mail.com')) < 1150
  AS rate_within_error_rate
FROM generate_series(1, 100000) i;
-- The estimate from the bits, summed over the layers.
SELECT sum(estimated_error_rate) <= 0.01 AS estimated_within FROM bloom_index_layers('growth_users_email');

-- A grown index's filter is one layered value (format version 3) holding every layer: no key
-- missing from it either (sql/layered_values.sql tests the format and following it).
SELECT get_byte(bloom_index_filter('growth_users_email')::bytea, 4) AS format_version,
       get_byte(bloom_index_filter('growth_users_email')::bytea, 6) AS layers;
SELECT count(*) AS false_negatives FROM growth_users,
       (SELECT bloom_index_filter('growth_users_email') AS f) v
WHERE NOT bloom_contains(v.f, email);

-- REINDEX makes it one layer again, sized by its capacity, and loses no key.
REINDEX INDEX growth_users_email;
SELECT layer, capacity, pages FROM bloom_index_layers('growth_users_email');
SELECT layers, needs_rebuild, advice FROM bloom_index_info('growth_users_email');
SELECT count(*) AS false_negatives FROM growth_users
WHERE NOT bloom_index_contains('growth_users_email', email);

-- The article's test on a grown index.
INSERT INTO growth_users (email) VALUES ('user7@mail.com');
SELECT bloom_index_contains('growth_users_email', 'user7@mail.com') AS user7,
       bloom_index_contains('growth_users_email', 'ghost@mail.com') AS ghost;

-- expansion: 0 (a fixed size) or 2 and more (2 without the option).
CREATE INDEX ON growth_users USING bloomfilter (email) WITH (expansion = 1);
CREATE INDEX ON growth_users USING bloomfilter (email) WITH (expansion = -1);
-- A fixed-size index is one layer, its full pages not counted.
CREATE INDEX growth_users_fixed ON growth_users USING bloomfilter (email) WITH (capacity = 1000, expansion = 0);
SELECT layer, capacity, error_rate, full_pages FROM bloom_index_layers('growth_users_fixed');
-- The option changes the next build, not the index as it is.
ALTER INDEX growth_users_fixed SET (expansion = 4);
SELECT count(*) AS layers FROM bloom_index_layers('growth_users_fixed');
INSERT INTO growth_users (email) SELECT 'more' || i || '@mail.com' FROM generate_series(1, 5000) i;
SELECT count(*) AS layers FROM bloom_index_layers('growth_users_fixed');
REINDEX INDEX growth_users_fixed;
INSERT INTO growth_users (email) SELECT 'again' || i || '@mail.com' FROM generate_series(1, 100000) i;
SELECT count(*) > 1 AS grew, max(capacity) FILTER (WHERE layer = 1) AS second_capacity
FROM bloom_index_layers('growth_users_fixed');
SELECT count(*) AS false_negatives FROM growth_users
WHERE NOT bloom_index_contains('growth_users_fixed', email);

-- A temporary table's index grows in local buffers.
CREATE TEMP TABLE growth_temp (k bigint);
CREATE INDEX growth_temp_k ON growth_temp USING bloomfilter (k) WITH (capacity = 100, expansion = 2);
INSERT INTO growth_temp SELECT generate_series(1, 5000);
SELECT count(*) > 1 AS grew FROM bloom_index_layers('growth_temp_k');
SELECT count(*) AS false_negatives FROM growth_temp WHERE NOT bloom_index_contains('growth_temp_k', k);

DROP TABLE growth_users;

-- Without options: expansion 2, the first layer sized for twice the rows the build finds, at
-- least 10,000 (an empty table), at a quarter of the error rate (0.01).
CREATE TABLE growth_plain (id bigserial PRIMARY KEY, email text);
CREATE INDEX growth_plain_empty ON growth_plain USING bloomfilter (email);
SELECT layer, capacity, error_rate, full_pages FROM bloom_index_layers('growth_plain_empty');
SELECT capacity, error_rate, hashes, layers, needs_rebuild, advice FROM bloom_index_info('growth_plain_empty');
SELECT pg_get_indexdef('growth_plain_empty'::regclass);
INSERT INTO growth_plain (email) SELECT 'plain' || i || '@mail.com' FROM generate_series(1, 30000) i;
INSERT INTO growth_plain (email) VALUES (NULL);
SELECT count(*) > 1 AS grew FROM bloom_index_layers('growth_plain_empty');
-- hashes: layer 0's, which its capacity and error rate give (each layer has its own).
SELECT i.hashes, i.hashes = (SELECT hashes FROM bloom_info(bloom_empty(l.capacity, l.error_rate))) AS layer_0s
  FROM bloom_index_info('growth_plain_empty') i, bloom_index_layers('growth_plain_empty') l
 WHERE l.layer = 0;
SELECT layers > 1 AS several, advice FROM bloom_index_info('growth_plain_empty');
CREATE INDEX growth_plain_rows ON growth_plain USING bloomfilter (email);
SELECT layer, capacity, error_rate FROM bloom_index_layers('growth_plain_rows');
-- REINDEX compacts: one layer, sized again for twice the rows now there.
INSERT INTO growth_plain (email) SELECT 'more' || i || '@mail.com' FROM generate_series(1, 30000) i;
REINDEX INDEX growth_plain_empty;
SELECT layer, capacity FROM bloom_index_layers('growth_plain_empty');
SELECT layers, advice FROM bloom_index_info('growth_plain_empty');
SELECT count(*) AS false_negatives FROM growth_plain
WHERE NOT bloom_index_contains('growth_plain_empty', email) OR NOT bloom_index_contains('growth_plain_rows', email);
-- capacity and error_rate override; a capacity below the rows gives way to twice the rows.
CREATE INDEX growth_plain_given ON growth_plain USING bloomfilter (email) WITH (capacity = 500000, error_rate = 0.001);
SELECT layer, capacity, error_rate FROM bloom_index_layers('growth_plain_given');
CREATE INDEX growth_plain_small ON growth_plain USING bloomfilter (email) WITH (capacity = 10);
SELECT layer, capacity FROM bloom_index_layers('growth_plain_small');
-- A rebuild past the capacity keeps room for twice the rows, as an index without options: the
-- writes after it add no layer at once (REINDEX here; pg_restore, VACUUM FULL and CLUSTER build
-- the same way).
REINDEX INDEX growth_plain_small;
SELECT layer, capacity, (SELECT count(*) FROM growth_plain) AS rows
FROM bloom_index_layers('growth_plain_small');
INSERT INTO growth_plain (email) SELECT 'after-reindex' || i || '@mail.com' FROM generate_series(1, 1000) i;
SELECT layers, advice FROM bloom_index_info('growth_plain_small');
DELETE FROM growth_plain WHERE email LIKE 'after-reindex%';
-- A rate so small that a key's bits take more than a page: without the option, a fixed size
-- (1,000,000 keys, as without capacity in 2.1); asked for, an error.
CREATE INDEX growth_plain_tiny_rate ON growth_plain USING bloomfilter (email) WITH (error_rate = 1e-12);
SELECT layer, capacity, error_rate, full_pages FROM bloom_index_layers('growth_plain_tiny_rate');
CREATE INDEX ON growth_plain USING bloomfilter (email) WITH (error_rate = 1e-12, expansion = 2);
-- A fixed size without capacity: 1,000,000 keys, as in 2.1.
CREATE INDEX growth_plain_fixed ON growth_plain USING bloomfilter (email) WITH (expansion = 0);
SELECT layer, capacity, error_rate, full_pages FROM bloom_index_layers('growth_plain_fixed');
DROP TABLE growth_plain;

-- Deleted keys: keys_beyond_rows estimates the keys the filter holds past the rows VACUUM counted
-- (which a rebuild drops), and advice is 'compact' once a REINDEX would halve the index.
CREATE TABLE growth_churn (email text NOT NULL);
INSERT INTO growth_churn SELECT 'churn' || i || '@mail.com' FROM generate_series(1, 20000) i;
CREATE INDEX growth_churn_email ON growth_churn USING bloomfilter (email);
VACUUM growth_churn;
SELECT layers, capacity, keys_beyond_rows < 200 AS none_beyond, advice FROM bloom_index_info('growth_churn_email');
DELETE FROM growth_churn WHERE email NOT LIKE '%0@mail.com';
VACUUM growth_churn;
SELECT layers, capacity, keys_beyond_rows BETWEEN 17000 AND 19000 AS deleted_keys, advice
FROM bloom_index_info('growth_churn_email');
REINDEX INDEX growth_churn_email;
SELECT layers, capacity, keys_beyond_rows < 200 AS none_beyond, advice FROM bloom_index_info('growth_churn_email');
DROP TABLE growth_churn;
