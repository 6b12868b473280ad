#!/usr/bin/env bash
# The Python client's benchmark (clients/python): Filter.contains against the SQL point lookups
# an application would otherwise send (pgbench -M prepared, 1 client, Unix socket), round by
# round in one run, and against a Python set; Filter.contains_many and IndexFollower.contains_many
# against a loop of contains on the same keys; the IndexFollower's lag from COMMIT to a true
# answer over 10,000 inserts at interval = 0.1 s; the cost of a refresh when nothing changed; the
# event loop while an AsyncIndexFollower reloads a 1M-key filter (psycopg, and asyncpg if
# installed); a ShardedIndexFollower's lag over three shard clusters; a check in SQL through
# PgBouncer in session and transaction mode against a direct connection (if pgbouncer is
# installed); a MultiIndexFollower of 4 indexes on one connection, its lag under a writer a table;
# IndexFollower.contains_many against a loop of contains on a fixed-size index and on indexes of 1
# and 6 layers (alone with BENCH_CLIENT_ONLY=layered); the memory (RSS and PSS, from
# /proc/PID/smaps_rollup) of 8 gunicorn workers following a 120 MB filter, each with its own copy
# against one SharedIndexFollower copy for the host (alone with BENCH_CLIENT_ONLY=shared; needs
# python3-gunicorn); issue #44's side-by-side rows (alone with BENCH_CLIENT_ONLY=speed): a SQL
# round trip against the compiled Filter.contains, IndexFollower.contains (with max_lag, and a
# composite key), the pure-Python checks (the Filter's and the followers', as when the issue
# was filed) and a frozenset lookup, and each batch per key against its single check;
# the compiled check (bloomfilter._native, built here when python3-dev is installed) against the
# pure-Python one, a check and a batch's key, on Filter and IndexFollower, side by side (the
# other sections measure the pure-Python check, as before there was a compiled one).
# Prints the figures and the target rows "what|measured|target|result"; with
# PYTHON_CLIENT_SUMMARY_FILE set, appends the rows there too (for bench/run.sh).
# A round of lookups counts only if other work did not change it (see bench/python_client.py);
# one more lookup runs with every CPU kept busy, for comparison.
# Needs the extension installed, python3-xxhash and python3-psycopg; python3-numpy for
# contains_many's accelerator (without it, the contains_many rows measure the pure-Python batch,
# which they print beside it anyway). Knobs: BENCH_LOOKUP_SECONDS
# (8, a pgbench run), BENCH_LOOKUP_ROUNDS (5 rounds that count), BENCH_ROUND_SPREAD (1.3: where
# the kernel gives no CPU pressure figures, how much slower than its best round the check may be
# in a round that counts), BENCH_FOLLOWER_INSERTS (10000), BENCH_PGBOUNCER_SECONDS (1, a round of
# checks through PgBouncer), BENCH_SPEED_SECONDS (1, a pass of checks in the speed section),
# BENCH_SHARED_CAPACITY (100000000, the capacity of the index the gunicorn workers follow; at
# 870000000 its filter is about 1 GB).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-/usr/bin/python3}
BUILD_DIR=build/bench
mkdir -p "$BUILD_DIR"
for module in xxhash psycopg; do
  "$PYTHON" -c "import $module" 2>/dev/null || { echo "bench: python3-$module is missing" >&2; exit 1; }
done
# The compiled check, built in place if it can be (without it its section says so).
(cd clients/python && "$PYTHON" setup.py -q build_ext --inplace 2>&1 | grep -v BetaConfiguration) || true
. bench/cluster.sh
# shellcheck source=SCRIPTDIR/lib.sh
source bench/lib.sh
trap cluster_cleanup_all EXIT
cluster_start python_bench "max_connections = 40"
# PgBouncer's directory (bench/python_client.py starts one, as clients/python/tests/pgbouncer.py
# does) goes with the clusters'.
export CLUSTER_ROOT BLOOM_TEST_USER
export BENCH_PGBENCH=$($PG_CONFIG --bindir)/pgbench
sql() { psql -X -q -v ON_ERROR_STOP=1 -At "$@"; }
# The capacity of the index the workers follow in the memory section (100M keys: 120 MB).
SHARED_CAPACITY=${BENCH_SHARED_CAPACITY:-100000000}
[[ $SHARED_CAPACITY =~ ^[1-9][0-9]*$ ]] || { echo "bench: BENCH_SHARED_CAPACITY must be a number" >&2; exit 1; }

echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
cpu_line
# The keys are text: the decimal digits of n, present for n < 1000000. pgbench's variables are
# numbers, and in -M prepared it sends one as the text parameter $1, so the SQL lookups get the
# same keys as Filter.contains, as an application would send them (a text parameter, no
# expression around it). Filter 2 holds the same numbers as user<n>@mail.com, for comparison.
sql -v shared_capacity="$SHARED_CAPACITY" <<'SQL'
CREATE EXTENSION bloomfilter;
CREATE TABLE users (id integer PRIMARY KEY, email text NOT NULL UNIQUE);
INSERT INTO users SELECT i, i::text FROM generate_series(0, 999999) AS i;
CREATE INDEX users_email_bloom ON users USING bloomfilter (email)
  WITH (capacity = 1000000, error_rate = 0.01);
CREATE TABLE filters (id integer PRIMARY KEY, f bloom NOT NULL);
INSERT INTO filters SELECT 1, bloom_agg(email, 1000000, 0.01) FROM users;
INSERT INTO filters SELECT 2, bloom_agg('user' || i || '@mail.com', 1000000, 0.01)
  FROM generate_series(0, 999999) AS i;
\i bench/layered_tables.sql
-- The speed section's composite keys: (id, email) pairs of the same numbers, in an index of two
-- columns.
CREATE TABLE pairs (id integer NOT NULL, email text NOT NULL);
INSERT INTO pairs SELECT i, i::text FROM generate_series(0, 999999) AS i;
CREATE INDEX pairs_bloom ON pairs USING bloomfilter (id, email)
  WITH (capacity = 1000000, error_rate = 0.01);
VACUUM (FREEZE, ANALYZE) users, filters, pairs;
-- A large index (at the default capacity of 100M a 120 MB filter, built in well under a second on
-- an empty-ish table), for the memory of 8 gunicorn workers following it, each with its own copy
-- or one shared copy.
CREATE TABLE big (email text NOT NULL);
INSERT INTO big SELECT i::text FROM generate_series(0, 99999) AS i;
CREATE INDEX big_email_bloom ON big USING bloomfilter (email)
  WITH (capacity = :shared_capacity, error_rate = 0.01, expansion = 0);
-- Four tables with an index each, for a MultiIndexFollower of the four on one connection.
SELECT format('CREATE TABLE multi%s (id bigserial PRIMARY KEY, email text NOT NULL UNIQUE)', n),
       format('CREATE INDEX multi%s_email_bloom ON multi%s USING bloomfilter (email) WITH (capacity = 100000)', n, n)
  FROM generate_series(0, 3) AS n \gexec
SQL

# Three more clusters, the shards of a users table (docs/multinode.md's layout: an email lives
# where bloom_shard(email, 3) says), for ShardedIndexFollower's lag.
main_host=$PGHOST main_port=$PGPORT
shards=()
for k in 0 1 2; do
  cluster_start "python_shard$k" "max_connections = 20" "shared_buffers = 32MB"
  sql -c "CREATE EXTENSION bloomfilter" \
      -c "CREATE TABLE users (email text PRIMARY KEY, CHECK (bloom_shard(email, 3) = $k))" \
      -c "CREATE INDEX users_email_bloom ON users USING bloomfilter (email) WITH (capacity = 1000000)"
  shards+=("host=$PGHOST port=$PGPORT user=postgres dbname=postgres")
done
export PGHOST=$main_host PGPORT=$main_port
BENCH_SHARDS=$(IFS=';'; echo "${shards[*]}")
export BENCH_SHARDS

PGDATABASE=postgres "$PYTHON" bench/python_client.py | tee "$BUILD_DIR/python_client.log"
echo
sed -n '/^== python client rows/,$p' "$BUILD_DIR/python_client.log" | tail -n +2 \
  | { echo "what|measured|target|result"; cat; } | column -t -s'|'
