-- An index that grows: WITH (expansion = N) adds a layer N times larger when the newest one is
-- full, at half its error rate, so that no key is ever missing and the whole index keeps its
-- error rate; a check reads every layer.
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
-- No key missing, and verify agrees.
SELECT count(*) AS false_negatives FROM growth_users
WHERE NOT bloom_index_contains('growth_users_email', email);
SELECT bloom_index_verify('growth_users_email') = count(*) AS verified FROM growth_users;
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
SELECT count(*) AS false_negatives FROM growth_users
WHERE NOT bloom_index_contains('growth_users_email', email);

-- The article's test on a grown index.
INSERT INTO growth_users (email) VALUES ('user7@mail.com');
SELECT bloom_index_contains('growth_users_email', 'user7@mail.com') AS user7,
       bloom_index_contains('growth_users_email', 'ghost@mail.com') AS ghost;

-- expansion: 0 (a fixed size, the default) or 2 and more.
CREATE INDEX ON growth_users USING bloomfilter (email) WITH (expansion = 1);
CREATE INDEX ON growth_users USING bloomfilter (email) WITH (expansion = -1);
-- A fixed-size index is one layer, its full pages not counted.
CREATE INDEX growth_users_fixed ON growth_users USING bloomfilter (email) WITH (capacity = 1000);
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
