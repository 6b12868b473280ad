#!/usr/bin/env bash
# The Python client's benchmark (clients/python): Filter.contains against the SQL point lookup
# (pgbench -M prepared, 1 client, TCP loopback), the IndexFollower's lag from COMMIT to a true
# answer over 10,000 inserts at interval = 0.1 s, and the cost of a refresh when nothing changed.
# Prints the figures and the three target rows "what|measured|target|result"; with
# PYTHON_CLIENT_SUMMARY_FILE set, appends the rows there too (for bench/run.sh).
# Needs the extension installed, python3-xxhash and python3-psycopg. Knobs: BENCH_LOOKUP_SECONDS
# (8) and BENCH_LOOKUP_ROUNDS (3) for pgbench, BENCH_FOLLOWER_INSERTS (10000).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-/usr/bin/python3}
LOOKUP_SECONDS=${BENCH_LOOKUP_SECONDS:-8}
LOOKUP_ROUNDS=${BENCH_LOOKUP_ROUNDS:-3}
BUILD_DIR=build/bench
mkdir -p "$BUILD_DIR"
for module in xxhash psycopg; do
  "$PYTHON" -c "import $module" 2>/dev/null || { echo "bench: python3-$module is missing" >&2; exit 1; }
done
. bench/cluster.sh
trap cluster_cleanup_all EXIT
cluster_start python_bench "max_connections = 40"
PGBENCH=$($PG_CONFIG --bindir)/pgbench
sql() { psql -X -q -v ON_ERROR_STOP=1 -At "$@"; }

echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
sql <<'SQL'
CREATE EXTENSION bloomfilter;
CREATE TABLE users (id integer PRIMARY KEY, email text NOT NULL UNIQUE);
INSERT INTO users SELECT i, 'user' || i || '@mail.com' FROM generate_series(0, 999999) AS i;
CREATE INDEX users_email_bloom ON users USING bloomfilter (email)
  WITH (capacity = 1000000, error_rate = 0.01);
CREATE TABLE filters (id integer PRIMARY KEY, f bloom NOT NULL);
INSERT INTO filters SELECT 1, bloom_agg(email, 1000000, 0.01) FROM users;
VACUUM (FREEZE, ANALYZE) users, filters;
SQL

echo
echo "== SQL point lookup: pgbench -M prepared, 1 client, TCP loopback, $LOOKUP_ROUNDS rounds of $LOOKUP_SECONDS s"
# Both SQL point lookups, round by round: bloom_index_contains on the index (what the follower
# replaces) and bloom_contains on a stored filter (what Filter.from_bytes replaces).
index_rounds=() bloom_rounds=()
for round in $(seq 1 "$LOOKUP_ROUNDS"); do
  for script in lookup_index lookup_bloom; do
    tps=$("$PGBENCH" -n -M prepared -c 1 -j 1 -T "$LOOKUP_SECONDS" -h 127.0.0.1 -p "$PGPORT" -U postgres \
          -f "bench/$script.sql" postgres 2>&1 | awk '/^tps = / {print $3; exit}')
    [ -n "$tps" ] || { echo "bench: pgbench $script failed" >&2; exit 1; }
    echo "round $round: $script $tps TPS"
    if [ "$script" = lookup_index ]; then index_rounds+=("$tps"); else bloom_rounds+=("$tps"); fi
  done
done

PGDATABASE=postgres "$PYTHON" bench/python_client.py "${index_rounds[*]}" "${bloom_rounds[*]}" | tee "$BUILD_DIR/python_client.log"
echo
sed -n '/^== python client rows/,$p' "$BUILD_DIR/python_client.log" | tail -n +2 \
  | { echo "what|measured|target|result"; cat; } | column -t -s'|'
