#!/usr/bin/env bash
# A check from a Citus coordinator, side by side: the bloomfilter index of the key's shard read by
# a distributed function that Citus delegates to the worker holding the shard, against the
# coordinator's router query through a unique btree index of the shard. Starts a coordinator and
# two workers of its own (bench/cluster.sh, throwaway), users distributed by email in 8 shards,
# then alternates pgbench runs on the coordinator, 1 client, -M prepared, over the Unix socket:
#   taken      SELECT users_email_taken('user' || :n || '@mail.com')        (PL/pgSQL, delegated)
#   taken_sql  SELECT users_email_taken_sql('user' || :n || '@mail.com')    (STABLE SQL, delegated)
#   exists     SELECT EXISTS (SELECT 1 FROM users WHERE email = 'user' || :n || '@mail.com')
# with n drawn from 1..2*ROWS (half registered); and, for members, the same emails in a table
# distributed by id (an email may be in any shard), with a btree and a bloomfilter index on email:
#   plain      SELECT bloom_index_contains('users_email_bloom', ...)     (every shard asked)
#   any        SELECT bloom_index_contains('members_email_bloom', ...)   (every shard asked)
#   exists_any SELECT EXISTS (SELECT 1 FROM members WHERE email = ...)   (every shard asked)
# Prints the TPS of each and the ratios round by round, their medians, and the shared buffers the
# workers read per check (pg_stat_statements on the workers, planning included, reset before
# each run).
#   bench/citus_check.sh      knobs: CITUS_CHECK_SECONDS (5), CITUS_CHECK_ROUNDS (4),
#                             CITUS_CHECK_ROWS (100000)
# Needs the extension and Citus installed into the server (test/citus.sh installs Citus).
set -euo pipefail
cd "$(dirname "$0")/.."
RUN_SECONDS=${CITUS_CHECK_SECONDS:-5}
ROUNDS=${CITUS_CHECK_ROUNDS:-4}
ROWS=${CITUS_CHECK_ROWS:-100000}
[ -f "$(pg_config --sharedir)/extension/citus.control" ] ||
  { echo "citus_check: Citus is not installed (test/citus.sh installs it)" >&2; exit 1; }

# shellcheck source=bench/cluster.sh
source bench/cluster.sh
work=$(mktemp -d -t bloomfilter-citus-check.XXXXXX)
trap 'cluster_cleanup_all; rm -rf "$work"' EXIT

declare -A host port
for node in coordinator worker1 worker2; do
  cluster_start "$node" "shared_preload_libraries = 'citus,pg_stat_statements'" \
    'max_prepared_transactions = 100' "citus.node_conninfo = 'sslmode=disable'" \
    'pg_stat_statements.track_planning = on'
  host[$node]=$PGHOST port[$node]=$PGPORT
done
sql() { local node=$1; shift; psql -X -q -At -v ON_ERROR_STOP=1 -h "${host[$node]}" -p "${port[$node]}" -U postgres -d postgres "$@"; }

for node in coordinator worker1 worker2; do sql "$node" -c 'CREATE EXTENSION citus'; done
sql coordinator >/dev/null <<SQL
SELECT citus_set_coordinator_host('127.0.0.1', ${port[coordinator]});
SELECT citus_add_node('127.0.0.1', ${port[worker1]});
SELECT citus_add_node('127.0.0.1', ${port[worker2]});
CREATE EXTENSION bloomfilter;
CREATE EXTENSION pg_stat_statements;
CREATE TABLE users (id bigserial, email text NOT NULL);
SELECT create_distributed_table('users', 'email', shard_count => 8);
INSERT INTO users (email) SELECT 'user' || i || '@mail.com' FROM generate_series(1, $ROWS) i;
CREATE UNIQUE INDEX users_email_key ON users (email);
CREATE INDEX users_email_bloom ON users USING bloomfilter (email) WITH (capacity = 100000);
VACUUM ANALYZE users;
CREATE FUNCTION users_email_taken(email text) RETURNS boolean LANGUAGE plpgsql STABLE AS \$\$
BEGIN
  RETURN bloom_index_contains('users_email_bloom_' || get_shard_id_for_distribution_column('users', email), email);
END \$\$;
SELECT create_distributed_function('users_email_taken(text)', '\$1', colocate_with := 'users', force_delegation := true);
CREATE FUNCTION users_email_taken_sql(email text) RETURNS boolean LANGUAGE sql STABLE AS \$\$
  SELECT bloom_index_contains('users_email_bloom_' || get_shard_id_for_distribution_column('users', email), email)
\$\$;
SELECT create_distributed_function('users_email_taken_sql(text)', '\$1', colocate_with := 'users');
CREATE TABLE members (id bigserial, email text NOT NULL);
SELECT create_distributed_table('members', 'id', shard_count => 8);
INSERT INTO members (email) SELECT 'user' || i || '@mail.com' FROM generate_series(1, $ROWS) i;
CREATE INDEX members_email_key ON members (email);
CREATE INDEX members_email_bloom ON members USING bloomfilter (email) WITH (capacity = 100000);
VACUUM ANALYZE members;
SQL
variants=(taken taken_sql exists plain any exists_any)
declare -A query=(
  [taken]="SELECT users_email_taken('user' || :n || '@mail.com');"
  [taken_sql]="SELECT users_email_taken_sql('user' || :n || '@mail.com');"
  [exists]="SELECT EXISTS (SELECT 1 FROM users WHERE email = 'user' || :n || '@mail.com');"
  [plain]="SELECT bloom_index_contains('users_email_bloom', 'user' || :n || '@mail.com');"
  [any]="SELECT bloom_index_contains('members_email_bloom', 'user' || :n || '@mail.com');"
  [exists_any]="SELECT EXISTS (SELECT 1 FROM members WHERE email = 'user' || :n || '@mail.com');"
)
for v in "${variants[@]}"; do
  printf '\\set n random(1, %d)\n%s\n' $((2 * ROWS)) "${query[$v]}" >"$work/$v.sql"
done
# Delegated: EXPLAIN on the coordinator shows the call sent to one worker.
sql coordinator -c "EXPLAIN (VERBOSE, COSTS OFF) SELECT users_email_taken('user7@mail.com')" | sed 's/^/  /'

# run VARIANT SECONDS: pgbench's TPS into tps[VARIANT] and its transactions into txns[VARIANT];
# the workers' pg_stat_statements are reset first and read after into blocks[VARIANT] and
# calls[VARIANT] (sums over both workers, this run's).
declare -A tps txns blocks calls
run() {
  local v=$1 seconds=$2 out node b c
  for node in worker1 worker2; do sql "$node" -c 'SELECT pg_stat_statements_reset()' >/dev/null; done
  out=$(pgbench -n -h "${host[coordinator]}" -p "${port[coordinator]}" -U postgres -M prepared -c 1 \
    -T "$seconds" -f "$work/$v.sql" postgres 2>&1) || { echo "$out" >&2; return 1; }
  blocks[$v]=0 calls[$v]=0
  for node in worker1 worker2; do
    read -r b c < <(sql "$node" -F ' ' -c "SELECT coalesce(sum(shared_blks_hit + shared_blks_read), 0),
      coalesce(sum(calls), 0) FROM pg_stat_statements
      WHERE query LIKE '%users_email_taken%' OR query LIKE '%EXISTS%users%' OR query LIKE '%members%' OR query LIKE '%bloom_index_contains%' OR query LIKE '%bloom_index_probe%'")
    blocks[$v]=$((blocks[$v] + b)) calls[$v]=$((calls[$v] + c))
  done
  tps[$v]=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' <<<"$out")
  txns[$v]=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$out")
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

for v in "${variants[@]}"; do run "$v" 1; done   # warm-up: caches, connections
echo
echo "pgbench -n -M prepared -c 1 -T $RUN_SECONDS on the coordinator, $ROWS users in 8 shards on 2 workers ($(nproc) cores)"
printf '%-6s %8s %10s %8s %13s %17s %8s %13s %6s %11s %15s\n' round taken taken_sql exists taken/exists \
  taken_sql/exists plain plain/exists any exists_any any/exists_any
declare -a r_taken r_sql r_plain r_any
declare -A sum_blocks sum_calls sum_done
for round in $(seq 1 "$ROUNDS"); do
  for v in "${variants[@]}"; do
    run "$v" "$RUN_SECONDS"
    sum_blocks[$v]=$(( ${sum_blocks[$v]:-0} + blocks[$v] )) sum_calls[$v]=$(( ${sum_calls[$v]:-0} + calls[$v] ))
    sum_done[$v]=$(( ${sum_done[$v]:-0} + txns[$v] ))
  done
  r_taken+=("$(ratio "${tps[taken]}" "${tps[exists]}")") r_sql+=("$(ratio "${tps[taken_sql]}" "${tps[exists]}")")
  r_plain+=("$(ratio "${tps[plain]}" "${tps[exists]}")") r_any+=("$(ratio "${tps[any]}" "${tps[exists_any]}")")
  printf '%-6s %8.0f %10.0f %8.0f %13s %17s %8.0f %13s %6.0f %11.0f %15s\n' "$round" "${tps[taken]}" \
    "${tps[taken_sql]}" "${tps[exists]}" "${r_taken[-1]}" "${r_sql[-1]}" "${tps[plain]}" "${r_plain[-1]}" \
    "${tps[any]}" "${tps[exists_any]}" "${r_any[-1]}"
done
printf '%-6s %8s %10s %8s %13s %17s %8s %13s %6s %11s %15s\n' median '' '' '' "$(median "${r_taken[@]}")" \
  "$(median "${r_sql[@]}")" '' "$(median "${r_plain[@]}")" '' '' "$(median "${r_any[@]}")"
echo
echo "shared buffers read on the workers per check (hit + read, planning included):"
for v in "${variants[@]}"; do
  printf '  %-10s %6.2f  (%d buffers, %d statements on the workers, %d checks by pgbench)\n' "$v" \
    "$(awk -v b="${sum_blocks[$v]}" -v c="${sum_done[$v]}" 'BEGIN { print (c ? b / c : 0) }')" \
    "${sum_blocks[$v]}" "${sum_calls[$v]}" "${sum_done[$v]}"
done
