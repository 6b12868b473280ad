#!/usr/bin/env bash
# The article's scenario on a throwaway cluster: 1,000,000 registered emails, a filter at p = 1%.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/cluster.sh
trap cluster_cleanup_all EXIT
cluster_start demo
echo "PostgreSQL $(psql -XAtc 'SHOW server_version') on a throwaway cluster (port $PGPORT)"
psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
\pset footer off
CREATE EXTENSION bloomfilter;
CREATE TABLE users (id bigint PRIMARY KEY, email text NOT NULL UNIQUE);
INSERT INTO users SELECT i, 'user' || i || '@mail.com' FROM generate_series(0, 999999) i;
CREATE TABLE filters (id int PRIMARY KEY, f bloom NOT NULL);

SELECT clock_timestamp() AS started \gset
INSERT INTO filters SELECT 1, bloom_agg(email) FROM users;
SELECT round(extract(epoch FROM clock_timestamp() - :'started') * 1000) AS build_ms \gset

\echo
\echo '== The filter, built with bloom_agg(email) over 1,000,000 emails'
SELECT capacity, error_rate, bits, hashes, bytes, round(bytes / 1024.0) AS kib,
       :build_ms AS build_ms
FROM filters, bloom_info(f);

\echo '== The article''s test'
SELECT bloom_contains(f, 'user7@mail.com') AS "user7@mail.com", bloom_contains(f, 'ghost@mail.com') AS "ghost@mail.com"
FROM filters;

\echo '== Every registered email is found (no false negatives)'
SELECT clock_timestamp() AS started \gset
SELECT count(*) AS registered, count(*) FILTER (WHERE bloom_contains(f, email)) AS found,
       round(extract(epoch FROM clock_timestamp() - :'started') * 1000) AS check_ms
FROM users, filters;

\echo '== False positives over 1,000,000 emails never registered'
SELECT clock_timestamp() AS started \gset
SELECT count(*) AS checked, count(*) FILTER (WHERE bloom_contains(f, 'new' || i || '@mail.com')) AS false_positives,
       round(100.0 * count(*) FILTER (WHERE bloom_contains(f, 'new' || i || '@mail.com')) / count(*), 3) AS rate_percent,
       round(extract(epoch FROM clock_timestamp() - :'started') * 1000) AS check_ms
FROM filters, generate_series(1, 1000000) i;

\echo '== One point lookup, as the signup form runs it (reads one 512-byte block of the stored filter)'
PREPARE check_email(text) AS SELECT bloom_contains(f, $1) FROM filters WHERE id = 1;
SELECT clock_timestamp() AS started \gset
EXECUTE check_email('someone.new@mail.com');
SELECT round(extract(epoch FROM clock_timestamp() - :'started') * 1000, 2) AS lookup_ms;
SQL
