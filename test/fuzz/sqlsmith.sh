#!/usr/bin/env bash
# Random SQL from sqlsmith against a throwaway cluster whose database holds bloom values in every
# storage form and bloomfilter indexes; fails if a server process crashed (or the server went
# away) or an index misses a row. Run after the extension is installed: make fuzz-sqlsmith (part
# of make fuzz).
#   SQLSMITH_SECONDS (60) bounds the run, SQLSMITH_MAX_QUERIES (100000) the queries, SQLSMITH_SEED
#   (the time) seeds it; the log goes to build/fuzz/sqlsmith.log and the server's to
#   build/fuzz/sqlsmith-server.log.
set -euo pipefail
cd "$(dirname "$0")/../.."
SECONDS_LIMIT=${SQLSMITH_SECONDS:-60}
MAX_QUERIES=${SQLSMITH_MAX_QUERIES:-100000}
SEED=${SQLSMITH_SEED:-$(date +%s)}
command -v sqlsmith >/dev/null || { echo "sqlsmith is not installed (Debian package sqlsmith)" >&2; exit 1; }
. bench/cluster.sh
trap cluster_cleanup_all EXIT
mkdir -p build/fuzz
# log_min_messages = log: the postmaster's report of a crashed process (LOG) is kept, the
# flood of ERRORs from generated queries is not.
cluster_start sqlsmith "log_min_messages = log" "log_min_error_statement = panic" \
  "max_parallel_workers_per_gather = 2"
server_log=$CLUSTER_ROOT/sqlsmith/server.log

# A non-superuser owns the database and installs the extension (it is trusted), so sqlsmith's
# queries run with the rights an application would have; each statement gets a second at most.
psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
CREATE ROLE bloom_sqlsmith LOGIN;
ALTER ROLE bloom_sqlsmith SET statement_timeout = '1s';
ALTER ROLE bloom_sqlsmith SET lock_timeout = '500ms';
CREATE DATABASE bloom_sqlsmith OWNER bloom_sqlsmith;
SQL
psql -X -q -v ON_ERROR_STOP=1 -U bloom_sqlsmith -d bloom_sqlsmith >/dev/null <<'SQL'
CREATE EXTENSION bloomfilter;
CREATE TABLE filters (id int PRIMARY KEY, f bloom, note text);
INSERT INTO filters VALUES
  (1, bloom_empty(10), 'empty'),
  (2, bloom_add(bloom_empty(100, 0.01), ARRAY['a', 'b', 'c']), 'inline'),
  (3, (SELECT bloom_agg('user' || i || '@mail.com') FROM generate_series(1, 50000) i), 'out of line'),
  (4, bloom_add(bloom_empty(1000, 0.001), 42::bigint), 'bigint'),
  (5, NULL, 'null');
CREATE TABLE users (id bigserial PRIMARY KEY, email text UNIQUE, account int, token uuid, raw bytea);
INSERT INTO users (email, account, token, raw)
SELECT 'user' || i || '@mail.com', i, md5(i::text)::uuid, int4send(i) FROM generate_series(1, 2000) i;
CREATE INDEX users_email_bloom ON users USING bloomfilter (email) WITH (capacity = 10000);
CREATE INDEX users_account_bloom ON users USING bloomfilter (account) WITH (capacity = 10000, error_rate = 0.001);
CREATE INDEX users_token_bloom ON users USING bloomfilter (token) WITH (capacity = 10000);
ANALYZE filters, users;
SQL
start_time=$(psql -X -A -t -c "SELECT pg_postmaster_start_time()")

echo "sqlsmith: up to $SECONDS_LIMIT s or $MAX_QUERIES queries, seed $SEED"
status=0
timeout --signal=INT --kill-after=10 "$SECONDS_LIMIT" \
  sqlsmith --target="host=$PGHOST port=$PGPORT user=bloom_sqlsmith dbname=bloom_sqlsmith" \
    --seed="$SEED" --max-queries="$MAX_QUERIES" --verbose >build/fuzz/sqlsmith.log 2>&1 || status=$?
cp "$server_log" build/fuzz/sqlsmith-server.log
# 124: stopped by the time limit, the normal end.
if [ "$status" -ne 0 ] && [ "$status" -ne 124 ] && [ "$status" -ne 130 ]; then
  echo "sqlsmith exited with status $status" >&2
fi
queries=$(tr '\r' '\n' < build/fuzz/sqlsmith.log | sed -n 's/^queries: //p' | tail -n 1)
error_rate=$(tr '\r' '\n' < build/fuzz/sqlsmith.log | sed -n 's/^error rate: //p' | tail -n 1)
echo "sqlsmith: ${queries:-?} queries (at least; progress is printed every few hundred), error rate ${error_rate:-?}"

failed=0
if grep -E "terminated by signal|server process .* was terminated|PANIC:|TRAP:" "$server_log" >&2; then
  failed=1
fi
if ! now=$(psql -X -A -t -c "SELECT pg_postmaster_start_time()") || [ "$now" != "$start_time" ]; then
  echo "the server restarted or is gone" >&2
  failed=1
fi
# The bloomfilter indexes still hold every row (sqlsmith's writes included); an index that
# cannot answer fails the check too.
missing=$(PGOPTIONS="-c statement_timeout=0" psql -X -A -t -v ON_ERROR_STOP=1 -U bloom_sqlsmith -d bloom_sqlsmith -c "
  SELECT count(*) FROM users WHERE (email IS NOT NULL AND NOT bloom_index_contains('users_email_bloom', email))
     OR (account IS NOT NULL AND NOT bloom_index_contains('users_account_bloom', account::bigint))
     OR (token IS NOT NULL AND NOT bloom_index_contains('users_token_bloom', token))") || missing=error
if [ "$missing" != "0" ]; then
  echo "bloomfilter indexes miss rows: $missing" >&2
  failed=1
fi
if [ "$failed" -ne 0 ]; then
  echo "fuzz-sqlsmith: FAILED (logs: build/fuzz/sqlsmith.log, build/fuzz/sqlsmith-server.log, seed $SEED)" >&2
  exit 1
fi
echo "fuzz-sqlsmith: no crash (seed $SEED; server log: build/fuzz/sqlsmith-server.log)"
