#!/usr/bin/env bash
# One filter over a users table sharded across PostgreSQL nodes, end to end on throwaway clusters
# on loopback: a coordinator whose users table is partitioned by home node (bloom_shard(email, 3))
# into a local partition and postgres_fdw foreign tables on two data nodes, and a streaming
# replica of the coordinator.
#   test/multinode.sh           test mode: 60,000 users, 3 timing rounds, 6 s of signups
#   test/multinode.sh --bench   1,000,000 users, 5 timing rounds, 10 s of signups
# Exits non-zero when a check fails:
#   1. bloom_agg runs on the data nodes (EXPLAIN VERBOSE: the aggregate is in the Remote SQL);
#   2. the union of the per-node filters is byte-identical to the filter built over all rows on one
#      node, and so is each of 64 shards built per node and merged per shard;
#   3. the signup pre-check on the coordinator, and the same answers and bytes on the standby;
#   4. signups on both nodes and through the coordinator (pgbench) while seals and merge rounds
#      run: afterwards no committed email is missing from the coordinator's filter, and the filter
#      is byte-identical to a fresh build over all rows (every new email merged exactly once).
# Then prints rows for `make bench`: build times, distributed against single-node, and the bytes
# received from the nodes, measured in the run. MULTINODE_SUMMARY_FILE=path appends the rows there
# as what|measured|target|result. Knobs: MULTINODE_ROWS, MULTINODE_ROUNDS, MULTINODE_SIGNUP_SECONDS.
set -euo pipefail
cd "$(dirname "$0")/.."

MODE=test
case ${1:-} in
  --bench) MODE=bench ;;
  "") ;;
  *) echo "usage: $0 [--bench]" >&2; exit 2 ;;
esac
if [ "$MODE" = bench ]; then
  ROWS=${MULTINODE_ROWS:-1000000} ROUNDS=${MULTINODE_ROUNDS:-5} SIGNUP_SECONDS=${MULTINODE_SIGNUP_SECONDS:-10}
else
  ROWS=${MULTINODE_ROWS:-60000} ROUNDS=${MULTINODE_ROUNDS:-3} SIGNUP_SECONDS=${MULTINODE_SIGNUP_SECONDS:-6}
fi
# Room for the table to double, and at least for the test's signups.
CAPACITY=$((ROWS * 2 > 200000 ? ROWS * 2 : 200000))
ERROR_RATE=0.01
SHARDS=64
NODE_CLIENTS=3
COORDINATOR_CLIENTS=2
started_at=$(date +%s)

# shellcheck source=SCRIPTDIR/cluster.sh
source test/cluster.sh
work=$CLUSTER_ROOT/work
mkdir -p "$work"
chmod 755 "$work"
background=()
cleanup() {
  touch "$work/stop"
  local pid
  for pid in "${background[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${background[@]}"; do wait "$pid" 2>/dev/null || true; done
  cluster_cleanup_all
}
trap cleanup EXIT

fail() { echo "multinode: FAILED: $*" >&2; exit 1; }
section() { printf '\n== %s\n' "$1"; }
declare -A HOST PORT
start() {
  local name=$1; shift
  cluster_start "$name" "$@"
  HOST[$name]=$PGHOST PORT[$name]=$PGPORT
}
# on CLUSTER psql-arguments...: psql on that cluster, unaligned, stopping at the first error.
on() {
  local name=$1; shift
  PGHOST=${HOST[$name]} PGPORT=${PORT[$name]} psql -X -q -At -v ON_ERROR_STOP=1 "$@"
}
filter_sql_vars=(-v capacity="$CAPACITY" -v error_rate="$ERROR_RATE" -v rows="$ROWS")

# ---------------------------------------------------------------------------------------------
section "setup ($MODE mode: $ROWS users, filter capacity $CAPACITY at error_rate $ERROR_RATE)"
settings=("jit = off" "max_parallel_workers_per_gather = 0" "max_wal_size = 4GB" "checkpoint_timeout = 30min")
for node in 1 2; do
  start "node$node" "${settings[@]}"
  on "node$node" "${filter_sql_vars[@]}" -v node="$node" -f test/multinode/node.sql >/dev/null
done
start coordinator "${settings[@]}"
on coordinator "${filter_sql_vars[@]}" -v node1_port="${PORT[node1]}" -v node2_port="${PORT[node2]}" \
  -f test/multinode/coordinator.sql -f test/multinode/measure.sql >/dev/null

# The streaming replica: a base backup of the coordinator with a replication slot, hot standby.
standby_dir=$CLUSTER_ROOT/standby
mkdir -p "$standby_dir"
[ "$(id -u)" -eq 0 ] && chown "$BLOOM_TEST_USER" "$standby_dir"
as_server_user "$PG_BIN/pg_basebackup" -h 127.0.0.1 -p "${PORT[coordinator]}" -U postgres \
  -D "$standby_dir/data" -R -X stream -C -S multinode_standby -c fast >"$standby_dir/basebackup.log" 2>&1 \
  || { cat "$standby_dir/basebackup.log"; fail "pg_basebackup"; }
HOST[standby]=$standby_dir PORT[standby]=$(free_port)
printf "port = %s\nunix_socket_directories = '%s'\nhot_standby = on\n" "${PORT[standby]}" "$standby_dir" \
  | as_server_user tee -a "$standby_dir/data/postgresql.conf" >/dev/null
as_server_user "$PG_BIN/pg_ctl" -D "$standby_dir/data" -l "$standby_dir/server.log" -w -t 60 start >/dev/null \
  || { cat "$standby_dir/server.log"; fail "standby start"; }
[ "$(on standby -c 'SELECT pg_is_in_recovery()')" = t ] || fail "the standby is not in recovery"

wait_for_standby() {
  local lsn i
  lsn=$(on coordinator -c "SELECT pg_current_wal_lsn()")
  for i in $(seq 1 600); do
    [ "$(on standby -c "SELECT pg_last_wal_replay_lsn() >= '$lsn'")" = t ] && return 0
    sleep 0.1
  done
  fail "the standby did not replay up to $lsn in 60 s"
}

for c in coordinator node1 node2 standby; do
  printf '%-12s PostgreSQL %s at 127.0.0.1:%s\n' "$c" "$(on "$c" -c 'SHOW server_version')" "${PORT[$c]}"
done
on coordinator -c "SELECT format('users: %s rows (node0 %s local, node1 %s, node2 %s, as seen from the coordinator)',
  count(*), count(*) FILTER (WHERE bloom_shard(email, 3) = 0), count(*) FILTER (WHERE bloom_shard(email, 3) = 1),
  count(*) FILTER (WHERE bloom_shard(email, 3) = 2)) FROM users"
# Each shard sized for its share of the capacity plus four standard deviations of a binomial share.
SHARD_CAPACITY=$(on coordinator -c "SELECT ceil($CAPACITY.0 / $SHARDS + 4 * sqrt($CAPACITY.0 / $SHARDS * (1 - 1.0 / $SHARDS)))::bigint")
FILTER_BYTES=$(on coordinator -c "SELECT bytes FROM bloom_info(bloom_empty($CAPACITY, $ERROR_RATE))")
SHARD_BYTES=$(on coordinator -c "SELECT bytes FROM bloom_info(bloom_empty($SHARD_CAPACITY, $ERROR_RATE))")
echo "filter: $FILTER_BYTES bytes; $SHARDS shards of capacity $SHARD_CAPACITY, $SHARD_BYTES bytes each"

# The statements of the build: per-node aggregates (grouped by the partition key, so each runs
# whole on its partition's node) and their union on the coordinator; the same per shard.
build_merged="SELECT bloom_union_agg(f) FROM (
    SELECT bloom_shard(email, 3) AS node, bloom_agg(email, $CAPACITY, $ERROR_RATE) AS f FROM users GROUP BY 1
  ) AS per_node"
build_sharded="SELECT shard, bloom_union_agg(f) FROM (
    SELECT bloom_shard(email, 3) AS node, bloom_shard(email, $SHARDS) AS shard,
           bloom_agg(email, $SHARD_CAPACITY, $ERROR_RATE) AS f
    FROM users GROUP BY 1, 2
  ) AS per_node GROUP BY shard"

# ---------------------------------------------------------------------------------------------
section "pushdown: EXPLAIN (VERBOSE, COSTS OFF) on the coordinator"
explain() { on coordinator -c "EXPLAIN (VERBOSE, COSTS OFF) $1"; }
# expect PLAN PATTERN COUNT WHAT
expect() {
  local found
  found=$(grep -cF -- "$2" <<<"$1" || true)
  [ "$found" -eq "$3" ] || { echo "$1"; fail "$4: expected $3 plan lines with '$2', found $found"; }
}

echo "-- 0. before the nodes have statistics on bloom_shard(email, 3) (for information, not checked):"
plan=$(explain "$build_merged")
if grep -q 'Remote SQL: SELECT public.bloom_shard(email, 3), public.bloom_agg' <<<"$plan"; then
  echo "   the aggregate is already pushed down"
else
  echo "   the coordinator fetches the rows: with use_remote_estimate the node's guess of the groups decides,"
  echo "   and without statistics on the expression it guesses far too many"
  sed 's/^/   /' <<<"$plan"
fi
for node in 1 2; do on "node$node" -f test/multinode/node-statistics.sql >/dev/null; done
echo "-- 0b. enable_partitionwise_aggregate = off: the grouping runs above the Append, on the coordinator"
plan=$(on coordinator -c "SET enable_partitionwise_aggregate = off" -c "EXPLAIN (VERBOSE, COSTS OFF) $build_merged")
sed 's/^/   /' <<<"$plan"
expect "$plan" "Remote SQL: SELECT email FROM public.users" 2 "partitionwise aggregation off"
on coordinator -c "ANALYZE users" >/dev/null

echo "-- 1. the merged filter: bloom_agg per node, grouped by the partition key; bloom_union_agg on the coordinator"
plan=$(explain "INSERT INTO filters $(sed 's/^SELECT /SELECT 1, /' <<<"$build_merged")")
echo "$plan"
expect "$plan" "Remote SQL: SELECT public.bloom_shard(email, 3), public.bloom_agg(email, ${CAPACITY}::bigint" 2 "merged build"
expect "$plan" "Async Foreign Scan" 2 "merged build"

echo "-- 2. $SHARDS shards: bloom_agg per node and shard; bloom_union_agg per shard on the coordinator"
plan=$(explain "INSERT INTO filter_shards $build_sharded")
echo "$plan"
expect "$plan" "Remote SQL: SELECT public.bloom_shard(email, 3), public.bloom_shard(email, $SHARDS), public.bloom_agg(email, ${SHARD_CAPACITY}::bigint" 2 "sharded build"

echo "-- 3. one foreign partition queried directly"
plan=$(explain "SELECT bloom_agg(email, $CAPACITY, $ERROR_RATE) FROM users_node1")
echo "$plan"
expect "$plan" "Relations: Aggregate on (public.users_node1)" 1 "direct partition"
expect "$plan" "Remote SQL: SELECT public.bloom_agg(email, ${CAPACITY}::bigint" 1 "direct partition"

echo "-- 4. no GROUP BY on the partition key: PostgreSQL 15 runs the partial aggregates on the coordinator"
plan=$(explain "SELECT bloom_agg(email, $CAPACITY, $ERROR_RATE) FROM users")
echo "$plan"
if grep -q 'Remote SQL: SELECT email FROM public.users' <<<"$plan"; then
  echo "   (the rows are fetched: partial aggregates are not sent to the nodes)"
else
  echo "   (this server sends partial aggregates to the nodes)"
fi

echo "-- 5. a merge round's read of a node's sealed deltas"
plan=$(explain "SELECT bloom_union_agg(f), max(batch), count(*), sum(emails) FROM filter_outbox_node1 WHERE batch > 0")
echo "$plan"
expect "$plan" "Remote SQL: SELECT public.bloom_union_agg(f), max(batch), count(*), sum(emails) FROM public.filter_outbox WHERE ((batch > 0))" 1 "merge read"

echo "-- 6. the pre-check's lookup for a \"probably taken\" email homed at node1: one partition, by its key"
homed=$(on node1 -c "SELECT email FROM users ORDER BY email LIMIT 1")
plan=$(explain "SELECT 1 FROM users WHERE email = '$homed' AND bloom_shard(email, 3) = bloom_shard('$homed'::text, 3)")
echo "$plan"
expect "$plan" "Remote SQL:" 1 "pre-check lookup"
expect "$plan" "Foreign Scan on public.users_node1" 1 "pre-check lookup"

# ---------------------------------------------------------------------------------------------
section "byte identity: distributed builds against the build over all rows on one node"
on coordinator -c "INSERT INTO filters $(sed 's/^SELECT /SELECT 1, /' <<<"$build_merged")"
on coordinator -c "INSERT INTO filter_shards $build_sharded"
# All rows on one node: a copy of users in a plain table on the coordinator.
on coordinator -c "CREATE TABLE users_all AS SELECT email FROM users" -c "VACUUM ANALYZE users_all"
read -r same all_rows bytes digest <<<"$(on coordinator -F ' ' -c "
  SELECT d.f::bytea = s.f::bytea, (SELECT count(*) FROM users_all), length(d.f::bytea), md5(d.f::bytea)
  FROM filters d, (SELECT bloom_agg(email, $CAPACITY, $ERROR_RATE) AS f FROM users_all) s WHERE d.id = 1")"
echo "merged filter (bloom_union_agg of 3 per-node bloom_agg): $bytes bytes, md5 $digest"
echo "  = bloom_agg over the $all_rows rows of users_all on the coordinator: $same"
[ "$same" = t ] || fail "the merged filter differs from the single-node build"
read -r shards same_shards <<<"$(on coordinator -F ' ' -c "
  SELECT count(*), count(*) FILTER (WHERE d.f::bytea = s.f::bytea)
  FROM filter_shards d FULL JOIN (SELECT bloom_shard(email, $SHARDS) AS shard,
      bloom_agg(email, $SHARD_CAPACITY, $ERROR_RATE) AS f FROM users_all GROUP BY 1) s USING (shard)")"
echo "sharded: $same_shards of $shards shards byte-identical to the single-node build per shard"
[ "$shards" -eq "$SHARDS" ] && [ "$same_shards" -eq "$SHARDS" ] || fail "sharded filters differ"
on coordinator -c "SELECT format('shards built on each node: node0 %s, node1 %s, node2 %s (the home and the shard come from one hash: each node holds a run of shards)',
    count(DISTINCT shard) FILTER (WHERE node = 0), count(DISTINCT shard) FILTER (WHERE node = 1),
    count(DISTINCT shard) FILTER (WHERE node = 2))
  FROM (SELECT bloom_shard(email, 3) AS node, bloom_shard(email, $SHARDS) AS shard FROM users_all) s"
echo "auto-sized per-node filters (bloom_agg(email)) cannot be merged:"
if out=$(on coordinator -c "SELECT bloom_union_agg(f) FROM (SELECT bloom_shard(email, 3), bloom_agg(email) AS f FROM users GROUP BY 1) s" 2>&1); then
  fail "auto-sized per-node filters were unioned"
fi
echo "  $out"

# ---------------------------------------------------------------------------------------------
section "build times and bytes received from the nodes: median of $ROUNDS rounds after a warm-up"
# Builds run serially (max_parallel_workers_per_gather = 0 on every server) except single_2_workers.
# The parts are timed alone: each node's aggregate as the coordinator receives it, and the merge.
on coordinator -c "CREATE STATISTICS users_all_shard ON (bloom_shard(email, $SHARDS)) FROM users_all" \
  -c "ANALYZE users_all" \
  -c "CREATE TABLE build_parts AS SELECT bloom_shard(email, 3) AS node, bloom_agg(email, $CAPACITY, $ERROR_RATE) AS f
      FROM users GROUP BY 1"
quote() { sed "s/'/''/g" <<<"$1"; }
# md5 of the result, to compare builds without printing them; for a foreign partition it is taken
# outside the aggregate's subquery, else postgres_fdw would send md5 to the node too.
declare -A timed=(
  [single]="SELECT md5(bloom_agg(email, $CAPACITY, $ERROR_RATE)::bytea) FROM users_all"
  [single_2_workers]="SELECT md5(bloom_agg(email, $CAPACITY, $ERROR_RATE)::bytea) FROM users_all"
  [distributed]="SELECT md5(($build_merged)::bytea)"
  [in_turn]="SELECT md5(($build_merged)::bytea)"
  [fetched]="SELECT md5(bloom_agg(email, $CAPACITY, $ERROR_RATE)::bytea) FROM users"
  [part_node0]="SELECT md5(f::bytea) FROM (SELECT bloom_agg(email, $CAPACITY, $ERROR_RATE) AS f FROM users_node0) s"
  [part_node1]="SELECT md5(f::bytea) FROM (SELECT bloom_agg(email, $CAPACITY, $ERROR_RATE) AS f FROM users_node1) s"
  [part_node2]="SELECT md5(f::bytea) FROM (SELECT bloom_agg(email, $CAPACITY, $ERROR_RATE) AS f FROM users_node2) s"
  [merge]="SELECT md5(bloom_union_agg(f)::bytea) FROM build_parts"
  [single_sharded]="SELECT md5(string_agg(md5(f::bytea), ',' ORDER BY shard)) FROM (
    SELECT bloom_shard(email, $SHARDS) AS shard, bloom_agg(email, $SHARD_CAPACITY, $ERROR_RATE) AS f
    FROM users_all GROUP BY 1) s"
  [distributed_sharded]="SELECT md5(string_agg(md5(bloom_union_agg::bytea), ',' ORDER BY shard)) FROM ($build_sharded) s"
)
kinds=(single single_2_workers distributed in_turn fetched part_node0 part_node1 part_node2 merge
       single_sharded distributed_sharded)
{
  echo "SET enable_partitionwise_aggregate = on;"
  for round in $(seq 0 "$ROUNDS"); do
    for kind in "${kinds[@]}"; do
      case $kind in
        single_2_workers) echo "SET max_parallel_workers_per_gather = 2;" ;;
        in_turn) echo "SET enable_async_append = off;" ;;
      esac
      echo "SELECT $round, '$kind', * FROM measure('$(quote "${timed[$kind]}")');"
      echo "RESET max_parallel_workers_per_gather; RESET enable_async_append;"
    done
  done
} >"$work/measure.sql"
on coordinator -F ' ' -f "$work/measure.sql" >"$work/measure.out"
# The rounds after the warm-up; every way of building one filter must give the same bytes.
awk '$1 > 0' "$work/measure.out" >"$work/measured"
for group in "single single_2_workers distributed in_turn fetched merge" "single_sharded distributed_sharded"; do
  digests=$(for kind in $group; do awk -v k="$kind" '$2 == k { print $5 }' "$work/measured"; done | sort -u | wc -l)
  [ "$digests" -eq 1 ] || { cat "$work/measure.out"; fail "builds of one filter differ ($group)"; }
done
median() { awk -v k="$1" -v c="$2" '$2 == k { print $c }' "$work/measured" | sort -g | awk '{ v[NR] = $1 } END {
  if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ms() { printf '%.1f' "$(median "$1" 3)"; }
received() { printf '%.0f' "$(median "$1" 4)"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
# Nodes on machines of their own would wait for the slowest part, then merge.
separate_ms=$(awk -v a="$(ms part_node0)" -v b="$(ms part_node1)" -v c="$(ms part_node2)" -v m="$(ms merge)" \
  'BEGIN { x = a > b ? a : b; x = x > c ? x : c; printf "%.1f", x + m }')
email_bytes=$(on coordinator -c "SELECT sum(octet_length(email)) FROM users_all WHERE bloom_shard(email, 3) <> 0")
workers=$(on coordinator -c "SET max_parallel_workers_per_gather = 2" \
  -c "EXPLAIN ${timed[single_2_workers]}" | sed -n 's/.*Workers Planned: \([0-9]*\).*/\1/p')
printf '%-20s %10s %16s\n' build ms bytes_received
for kind in "${kinds[@]}"; do
  printf '%-20s %10s %16s\n' "$kind" "$(ms "$kind")" "$(received "$kind")"
done
cat <<EOF
single: bloom_agg over users_all, all rows in one table on the coordinator (single_2_workers: the
  same with ${workers:-0} parallel workers planned); distributed: each node's bloom_agg pushed down, the
  nodes at once (async Append), bloom_union_agg on the coordinator; in_turn: the same with
  enable_async_append = off; fetched: no GROUP BY on the partition key, the rows come to the
  coordinator; part_node*: one partition's bloom_agg alone, as the coordinator receives it; merge:
  bloom_union_agg of the 3 per-node filters stored on the coordinator. Sharded: $SHARDS shards per node
  and their union per shard. All three servers share this $(nproc)-CPU machine (load average now
  $(cut -d' ' -f1-3 /proc/loadavg)); nodes on machines of their own would take about the slowest
  part plus the merge, $separate_ms ms. The nodes' emails are $email_bytes bytes; each node's filter
  travels as hex text, twice its $FILTER_BYTES bytes.
EOF

# ---------------------------------------------------------------------------------------------
section "signup pre-check on the coordinator and on its streaming replica"
precheck_sql="
WITH candidates AS (
  SELECT 'user' || g || '@mail.com' AS email, true AS registered FROM generate_series(1, $ROWS, $((ROWS / 1000))) AS g
  UNION ALL
  SELECT 'new' || g || '@mail.com', false FROM generate_series(1, 1000) AS g
), answers AS (
  SELECT c.*, bloom_contains((SELECT f FROM filters WHERE id = 1), c.email) AS probably,
         email_taken(c.email) AS taken
  FROM candidates c
)
SELECT count(*) FILTER (WHERE registered), count(*) FILTER (WHERE registered AND taken),
       count(*) FILTER (WHERE NOT registered), count(*) FILTER (WHERE NOT registered AND taken),
       count(*) FILTER (WHERE NOT registered AND probably),
       md5(string_agg(probably::text || '/' || taken::text, ',' ORDER BY email))
FROM answers"
filters_digest_sql="SELECT md5((SELECT f FROM filters WHERE id = 1)::bytea) || ' '
  || md5((SELECT string_agg(md5(f::bytea), ',' ORDER BY shard) FROM filter_shards))"
read -r registered registered_taken fresh fresh_taken fresh_probably answers <<<"$(on coordinator -F ' ' -c "$precheck_sql")"
echo "coordinator: $registered_taken of $registered registered emails taken; $fresh_taken of $fresh new emails taken,"
echo "  $fresh_probably of them asked their home node (filter false positives), answers md5 $answers"
[ "$registered_taken" -eq "$registered" ] && [ "$fresh_taken" -eq 0 ] || fail "wrong pre-check answers"
wait_for_standby
standby_answers=$(on standby -F ' ' -c "$precheck_sql")
echo "standby:     $standby_answers"
[ "$standby_answers" = "$registered $registered_taken $fresh $fresh_taken $fresh_probably $answers" ] \
  || fail "the standby answers differently"
primary_digest=$(on coordinator -c "$filters_digest_sql")
standby_digest=$(on standby -c "$filters_digest_sql")
echo "filter and shard bytes (md5): coordinator $primary_digest"
echo "                              standby     $standby_digest"
[ "$primary_digest" = "$standby_digest" ] || fail "the standby's filters differ"
# A registered email is refused by the pre-check; one just signed up on node1 and not merged yet
# passes the stale filter and is refused by its home node's primary key.
registered_email=$(on coordinator -c "SELECT email FROM users_node2 ORDER BY email LIMIT 1")
stale_email=$(on node1 -c "INSERT INTO users (email) VALUES (homed_email('not-merged-yet', 1)) RETURNING email")
for email in "$registered_email" "$stale_email"; do
  out=$(on coordinator -c "DO \$\$ BEGIN CALL sign_up('$email');
    RAISE EXCEPTION 'sign_up accepted %', '$email';
    EXCEPTION WHEN unique_violation THEN RAISE NOTICE 'refused %: %', '$email', SQLERRM; END \$\$" 2>&1) \
    || { echo "$out"; fail "sign_up('$email')"; }
  echo "${out#NOTICE:  }"
done

# ---------------------------------------------------------------------------------------------
section "keeping it current: ${SIGNUP_SECONDS} s of signups on node1, node2 ($NODE_CLIENTS clients each) and the coordinator ($COORDINATOR_CLIENTS), seals and merge rounds meanwhile"
cp test/multinode/node-signup.sql test/multinode/node-rollback.sql \
   test/multinode/coordinator-signup.sql test/multinode/coordinator-rollback.sql "$work/"
chmod 644 "$work"/*.sql
# Each node (and the coordinator for its own partition) seals its delta every 0.2 s, as cron
# would; two merge loops on the coordinator run rounds every 0.3 s, so rounds also overlap.
sealer() {
  while [ ! -e "$work/stop" ]; do
    for c in node1 node2 coordinator; do
      on "$c" -c "SELECT filter_delta_seal()" >>"$work/seals.log" 2>&1 || echo "seal on $c failed" >>"$work/errors.log"
    done
    sleep 0.2
  done
}
merger() {
  while [ ! -e "$work/stop" ]; do
    on coordinator -F ' ' -c "CALL filter_merge_round()" >>"$work/merges.log" 2>&1 || echo "merge round failed" >>"$work/errors.log"
    sleep 0.3
  done
}
rm -f "$work/stop"
: >"$work/errors.log"
sealer & background+=($!)
merger & background+=($!)
merger & background+=($!)
run_pgbench() {
  local name=$1 clients=$2; shift 2
  "$PG_BIN/pgbench" -n -h 127.0.0.1 -p "${PORT[$name]}" -U postgres -c "$clients" -j 1 -T "$SIGNUP_SECONDS" \
    -M prepared "$@" postgres >"$work/pgbench-$name.log" 2>&1
}
declare -A pgbench_pid
for node in 1 2; do
  run_pgbench "node$node" "$NODE_CLIENTS" -D node="$node" -f "$work/node-signup.sql@9" -f "$work/node-rollback.sql@1" &
  pgbench_pid[node$node]=$!
done
run_pgbench coordinator "$COORDINATOR_CLIENTS" -f "$work/coordinator-signup.sql@9" -f "$work/coordinator-rollback.sql@1" &
pgbench_pid[coordinator]=$!
pgbench_failed=()
for c in node1 node2 coordinator; do
  wait "${pgbench_pid[$c]}" && ! grep -qiE 'aborted|error' "$work/pgbench-$c.log" || pgbench_failed+=("$c")
done
for c in "${pgbench_failed[@]}"; do echo "-- pgbench on $c:"; cat "$work/pgbench-$c.log"; done
[ ${#pgbench_failed[@]} -eq 0 ] || fail "pgbench on ${pgbench_failed[*]}"
touch "$work/stop"
for pid in "${background[@]}"; do wait "$pid"; done
background=()
if [ -s "$work/errors.log" ]; then
  cat "$work/errors.log" "$work/seals.log" "$work/merges.log"; fail "a seal or merge round failed"
fi
rounds_during=$(wc -l <"$work/merges.log")
seals_during=$(grep -c '^[0-9]' "$work/seals.log" || true)
batches_during=$(awk '{ b += $1 } END { print b + 0 }' "$work/merges.log")
# The last round: seal everything committed, merge it.
for c in node1 node2 coordinator; do on "$c" -c "SELECT filter_delta_seal()" >/dev/null; done
read -r last_batches last_emails <<<"$(on coordinator -F ' ' -c "CALL filter_merge_round()")"
echo "during the signups: $seals_during seals made a batch, $rounds_during merge rounds merged $batches_during batches"
echo "after them: a last seal on each node and a last round merged $last_batches batches, $last_emails emails"
for c in node1 node2 coordinator; do
  printf '%-12s signups %6s tps (pgbench, 1 in 10 rolled back)\n' "$c" \
    "$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$work/pgbench-$c.log" | head -1 | cut -d. -f1)"
done

# Every source's committed and rolled-back signups, checked against the coordinator's filter.
on coordinator -c "
  CREATE FOREIGN TABLE rolled_back_node1 (email text) SERVER node1 OPTIONS (table_name 'rolled_back');
  CREATE FOREIGN TABLE rolled_back_node2 (email text) SERVER node2 OPTIONS (table_name 'rolled_back')" >/dev/null
printf '%-12s %10s %12s %16s %16s\n' source committed rolled_back rolled_back_seen false_negatives
on coordinator -F ' ' -c "
  WITH f AS (SELECT f FROM filters WHERE id = 1),
  committed AS (
    SELECT CASE WHEN email LIKE 'n1c%' OR email LIKE 'not-merged-yet%' THEN 'node1' WHEN email LIKE 'n2c%' THEN 'node2'
                WHEN email LIKE 'co%' THEN 'coordinator' ELSE 'initial' END AS source,
           count(*) AS n, count(*) FILTER (WHERE NOT bloom_contains(f.f, u.email)) AS missing
    FROM users u, f GROUP BY 1),
  rolled AS (
    SELECT source, count(*) AS n, count(*) FILTER (WHERE bloom_contains(f.f, r.email)) AS seen
    FROM (SELECT 'node1' AS source, email FROM rolled_back_node1 UNION ALL
          SELECT 'node2', email FROM rolled_back_node2 UNION ALL
          SELECT 'coordinator', email FROM rolled_back) r, f GROUP BY 1)
  SELECT c.source, c.n, coalesce(r.n, 0), coalesce(r.seen, 0), c.missing
  FROM committed c LEFT JOIN rolled r USING (source) ORDER BY c.source" >"$work/signups.txt"
awk '{ printf "%-12s %10s %12s %16s %16s\n", $1, $2, $3, $4, $5 }' "$work/signups.txt"
false_negatives=$(awk '{ m += $5 } END { print m + 0 }' "$work/signups.txt")
signed_up=$(awk '$1 != "initial" { n += $2 } END { print n + 0 }' "$work/signups.txt")
[ "$signed_up" -gt 0 ] || fail "no signup committed"
[ "$false_negatives" -eq 0 ] || fail "$false_negatives committed emails are missing from the coordinator's filter"
echo "every committed email ($signed_up new, $ROWS initial) is found in the coordinator's filter"
leftover=$(for c in node1 node2 coordinator; do
  on "$c" -c "SELECT (SELECT count(*) FROM filter_pending) + (SELECT count(*) FROM filter_outbox)"; done \
  | awk '{ n += $1 } END { print n + 0 }')
[ "$leftover" -eq 0 ] || fail "$leftover pending emails or outbox batches left after the last round"
read -r exact inserted rows_now <<<"$(on coordinator -F ' ' -c "
  SELECT f.f::bytea = ($build_merged)::bytea, (bloom_info(f.f)).inserted, (SELECT count(*) FROM users)
  FROM filters f WHERE f.id = 1")"
echo "merged filter = fresh distributed build over the $rows_now rows now: $exact (inserted = $inserted: each email merged once)"
[ "$exact" = t ] || fail "the merged filter differs from a fresh build: an email was merged twice or lost"
wait_for_standby
primary_digest=$(on coordinator -c "$filters_digest_sql")
standby_digest=$(on standby -c "$filters_digest_sql")
standby_answers=$(on standby -F ' ' -c "$precheck_sql")
primary_answers=$(on coordinator -F ' ' -c "$precheck_sql")
echo "after the signups: standby filter bytes identical: $([ "$primary_digest" = "$standby_digest" ] && echo t || echo f);" \
  "pre-check answers identical: $([ "$primary_answers" = "$standby_answers" ] && echo t || echo f)"
[ "$primary_digest" = "$standby_digest" ] && [ "$primary_answers" = "$standby_answers" ] \
  || fail "the standby differs after the signups"

rows=(
  "e) multinode: distributed build time / single-node build time|$(ratio "$(ms distributed)" "$(ms single)")"
  "e) multinode: distributed / single-node with ${workers:-0} parallel workers|$(ratio "$(ms distributed)" "$(ms single_2_workers)")"
  "e) multinode: distributed, nodes in turn / single-node|$(ratio "$(ms in_turn)" "$(ms single)")"
  "e) multinode: rows fetched to the coordinator / single-node|$(ratio "$(ms fetched)" "$(ms single)")"
  "e) multinode: slowest part + merge / single-node (separate machines)|$(ratio "$separate_ms" "$(ms single)")"
  "e) multinode: sharded distributed build / single-node|$(ratio "$(ms distributed_sharded)" "$(ms single_sharded)")"
  "e) multinode: distributed build ms ($ROWS rows)|$(ms distributed)"
  "e) multinode: single-node build ms ($ROWS rows)|$(ms single)"
  "e) multinode: bytes from the nodes, filters|$(received distributed)"
  "e) multinode: bytes from the nodes, rows fetched|$(received fetched)"
  "e) multinode: bytes, filters / rows fetched|$(ratio "$(received distributed)" "$(received fetched)")"
  "e) multinode: bytes from the nodes, $SHARDS shards|$(received distributed_sharded)"
)
section "rows for make bench"
{
  echo "what|measured|target|result"
  for row in "${rows[@]}"; do echo "$row|-|-"; done
} | column -t -s'|'
if [ -n "${MULTINODE_SUMMARY_FILE:-}" ]; then
  for row in "${rows[@]}"; do echo "$row|-|-"; done >>"$MULTINODE_SUMMARY_FILE"
fi

section "multinode: all checks passed ($MODE mode, $(( $(date +%s) - started_at )) s)"
