#!/usr/bin/env bash
# The Node.js client's benchmark (clients/node): Filter.contains against bloom_index_contains sent
# through pg (1 client, a prepared statement, the same keys), round by round; containsMany against
# a loop of contains, per key (batches of 1000 keys, one run); the IndexFollower's lag from COMMIT
# to a true answer over 10,000 inserts at interval = 100 ms, and that of a follower of 4 indexes
# on one connection under a writer a table; the longest stall of the event loop while the
# follower loads a 1M-key filter; a check in SQL through PgBouncer in session and transaction
# mode against a direct connection (if pgbouncer is installed; clients/node/test/pgbouncer.mjs
# starts it); containsMany against a loop of contains on followers of a fixed-size index and of
# indexes of 1 and 6 layers (alone with BENCH_CLIENT_ONLY=layered). Prints the figures and the target rows "what|measured|target|result"; with
# NODE_CLIENT_SUMMARY_FILE set, appends the rows there too (for bench/run.sh). Needs the
# extension installed, nodejs and npm. Knobs: BENCH_LOOKUP_SECONDS (2 per round and side),
# BENCH_LOOKUP_ROUNDS (5), BENCH_FOLLOWER_INSERTS (10000), BENCH_RELOADS (5),
# BENCH_PGBOUNCER_SECONDS (1, a round of checks through PgBouncer).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=build/bench
mkdir -p "$BUILD_DIR"
for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "bench: $tool is missing (apt-get install nodejs npm)" >&2; exit 1; }
done
export LC_ALL=C.UTF-8
. bench/cluster.sh
trap cluster_cleanup_all EXIT
cluster_start node_bench "max_connections = 40"
# PgBouncer's directory (bench/node_client.mjs starts one, as the tests do) goes with the clusters'.
export CLUSTER_ROOT BLOOM_TEST_USER
(cd clients/node && npm ci --no-audit --no-fund --loglevel=error && node scripts/build.mjs)
sql() { psql -X -q -v ON_ERROR_STOP=1 -At "$@"; }

echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) at start; node $(node --version)"
# The keys are text: the decimal digits of n, present for n < 1000000, as in bench/python_client.sh.
sql <<'SQL'
CREATE DATABASE node_bench TEMPLATE template0 ENCODING 'UTF8' LOCALE 'C.UTF-8';
\c node_bench
CREATE EXTENSION bloomfilter;
CREATE TABLE users (id integer PRIMARY KEY, email text NOT NULL UNIQUE);
INSERT INTO users SELECT i, i::text FROM generate_series(0, 999999) AS i;
CREATE INDEX users_email_bloom ON users USING bloomfilter (email)
  WITH (capacity = 1000000, error_rate = 0.01);
CREATE TABLE signups (id bigserial PRIMARY KEY, email text NOT NULL);
CREATE INDEX signups_email_bloom ON signups USING bloomfilter (email)
  WITH (capacity = 100000, error_rate = 0.01);
-- Four tables with an index each, for a follower of the four on one connection.
SELECT format('CREATE TABLE multi%s (id bigserial PRIMARY KEY, email text NOT NULL UNIQUE)', n),
       format('CREATE INDEX multi%s_email_bloom ON multi%s USING bloomfilter (email) WITH (capacity = 100000)', n, n)
  FROM generate_series(0, 3) AS n \gexec
\i bench/layered_tables.sql
VACUUM (FREEZE, ANALYZE) users;
SQL

PGDATABASE=node_bench node bench/node_client.mjs | tee "$BUILD_DIR/node_client.log"
echo
sed -n '/^== node client rows/,$p' "$BUILD_DIR/node_client.log" | tail -n +2 \
  | { echo "what|measured|target|result"; cat; } | column -t -s'|'
