-- The scenario of the article this project grew from: 1,000,000 registered emails, p = 1%.
-- The upgrade run installs 1.0 and updates it before the suite: quiet "already exists" here.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS bloomfilter;
RESET client_min_messages;
SELECT extversion FROM pg_extension WHERE extname = 'bloomfilter';

CREATE TABLE users (id bigint PRIMARY KEY, email text NOT NULL UNIQUE);
INSERT INTO users SELECT i, 'user' || i || '@mail.com' FROM generate_series(0, 999999) AS i;
CREATE TABLE filters (id int PRIMARY KEY, f bloom NOT NULL);
INSERT INTO filters SELECT 1, bloom_agg(email) FROM users;

-- Sizing: m = ceil(-(n ln p) / (ln 2)^2) = 9,585,059 bits, rounded up by at most 1%; k = 7;
-- about 1170 KiB.
SELECT capacity, error_rate, bits, hashes, bytes, round(bytes / 1024.0) AS kib,
       bits >= 9585059 AND bits <= 9585059 * 1.01 AS bits_within_one_percent_of_m,
       inserted
FROM filters, bloom_info(f);

-- The article's test.
SELECT bloom_contains(f, 'user7@mail.com') AS user7, bloom_contains(f, 'ghost@mail.com') AS ghost
FROM filters;

-- Never a false negative: every one of the 1M added emails is found.
SELECT count(*) AS false_negatives FROM users, filters WHERE NOT bloom_contains(f, users.email);

-- False positives over 1M emails never added: within 1.05 x p.
SELECT count(*) AS false_positives, count(*) / 1e6 <= 0.0105 AS within_bound
FROM filters, generate_series(1, 1000000) AS i
WHERE bloom_contains(f, 'ghost' || i || '@mail.com');

-- The estimate agrees with the measurement.
SELECT round(estimated_error_rate::numeric, 4) AS estimated_error_rate,
       abs(estimated_count - 1000000) < 5000 AS estimated_count_close
FROM filters, bloom_info(f);

-- Building is deterministic: the aggregate and bloom_add over the same emails give the same bytes.
SELECT (SELECT f FROM filters) = bloom_add(bloom_empty(1000000, 0.01), array_agg(email ORDER BY id DESC))
       AS agg_equals_add
FROM users;
