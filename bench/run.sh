#!/usr/bin/env bash
# The benchmarks behind `make bench`, printed side by side with ratios measured in the same run:
#   a) point lookups with pgbench over the Unix socket: bloom_contains on a stored filter, bloom_index_contains on a
#      bloomfilter index (of a table, and of a table hash-partitioned into 64 partitions by id),
#      SELECT 1, a unique-index probe, and the same probe on the partitioned table;
#   b) a batch check of a million candidates against the stored filter, next to a join of the
#      same shape that calls length() instead;
#   c) builds: bloom_agg(email) and bloom_agg(email, 1000000, 0.01) next to count(email), serial
#      and with 2 parallel workers, with the backend's peak memory; bloom_agg(email) spilling
#      past work_mem; CREATE INDEX USING bloomfilter next to a btree's, in memory and sorted;
#   d) the C++ core's add and contains next to libbloom and the article's algorithm (Google
#      Benchmark), with each way the core can check a block forced, and the one it chose;
#   e) signups per second and WAL per signup at 8 clients: plain INSERT, a single-row filter,
#      64 shards, the bloomfilter index, and that index rebuilt during the run (t/006_signups.pl);
#   f) the distributed build over three nodes against one node, and the bytes moved
#      (t/007_multinode.pl with MULTINODE_BENCH=1);
#   g) the Python client: its local check against the SQL point lookup, the follower's lag and
#      the cost of a refresh when nothing changed (bench/python_client.sh);
#   h) the Node.js client: Filter.contains against bloom_index_contains through pg, the follower's
#      lag and the longest event-loop stall during a reload (bench/node_client.sh);
#   i) an index that grows (WITH (expansion = 2)): its false-positive rate and pages per check
#      from 1x to 100x its first capacity, checks on 1, 4 and 8 layers against SELECT 1, its size,
#      and signups through it against a plain INSERT (bench/growth.sh);
#   j) bloom_agg under GROUP BY (many small groups to a few large ones) next to count(DISTINCT),
#      within hash_mem (bench/groupby.sh).
# Then a summary: what / measured / target / PASS or MISS.
#   bench/run.sh                      the README's headline figures: a, c and e (a few minutes)
#   BENCH_SECTIONS="a d" bench/run.sh some sections; BENCH_SECTIONS=all (make bench-all) every one
#
# Needs the extension built and installed (make bench does both). It sets up its data on a
# throwaway cluster. A missed target is reported, not an error: the script exits 0 then, and
# non-zero only when something could not be set up or run.
#
# Every ratio is the median of ratios taken round by round, between runs next to each other in
# time: on a small shared machine the load of other processes drifts, and adjacent runs see about
# the same. Knobs: BENCH_LOOKUP_SECONDS (3; 2 by default) and BENCH_LOOKUP_ROUNDS (8; 5 by
# default) for pgbench, BENCH_ROUNDS
# (5) for the timed queries of a)'s checks inside a statement, b) and c); BENCH_STOP_AFTER (a
# section's letter: print the summary so far after it, and stop).
set -euo pipefail
cd "$(dirname "$0")/.."

# BENCH_SECTIONS: the sections to run, as letters ("a c", "a,e") or "all" (make bench-all). By
# default the README's headline figures, in a few minutes: a, c and e, with 5 rounds of 2 s for
# a's pgbench runs.
SECTIONS=${BENCH_SECTIONS:-default}
QUICK=
case $SECTIONS in
  all) SECTIONS="a b c d e f g h i j" ;;
  default) SECTIONS="a c e" QUICK=1 ;;
esac
SECTIONS=" ${SECTIONS//,/ } "
for letter in $SECTIONS; do
  case $letter in [a-j]) ;; *) echo "bench: BENCH_SECTIONS: no section $letter (a to j, or all)" >&2; exit 2 ;; esac
done
want() { [[ $SECTIONS == *" $1 "* ]]; }
LOOKUP_SECONDS=${BENCH_LOOKUP_SECONDS:-${QUICK:+2}}
LOOKUP_SECONDS=${LOOKUP_SECONDS:-3}
LOOKUP_ROUNDS=${BENCH_LOOKUP_ROUNDS:-${QUICK:+5}}
LOOKUP_ROUNDS=${LOOKUP_ROUNDS:-8}
ROUNDS=${BENCH_ROUNDS:-5}
STOP_AFTER=${BENCH_STOP_AFTER:-}
BUILD_DIR=build/bench
mkdir -p "$BUILD_DIR"
started_at=$(date +%s)

fail() { echo "bench: $*" >&2; exit 1; }

# ---------------------------------------------------------------------------------------------
# Helpers: statistics, comparisons and the summary rows.

# shellcheck source=SCRIPTDIR/lib.sh
source bench/lib.sh
summary=()
# row WHAT MEASURED OP TARGET: a summary row; row WHAT MEASURED: one with no target, for context.
row() {
  if [ $# -eq 2 ]; then summary+=("$1|$2|-|-"); return; fi
  summary+=("$1|$2|$3 $4|$(verdict "$2" "$3" "$4")")
}
section() { printf '\n== %s\n' "$1"; }
print_summary() {
  section "summary ($(( $(date +%s) - started_at )) s, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end)"
  {
    echo "what|measured|target|result"
    printf '%s\n' "${summary[@]}"
  } | column -t -s'|'
  local passed targets
  passed=$(printf '%s\n' "${summary[@]}" | grep -c '|PASS$' || true)
  targets=$(printf '%s\n' "${summary[@]}" | grep -c -e '|PASS$' -e '|MISS$' || true)
  echo "$passed of $targets targets met"
}
# stop_after LETTER: at the end of a section; with BENCH_STOP_AFTER=LETTER, the summary so far and
# exit (the EXIT trap removes the cluster).
stop_after() {
  [ "$STOP_AFTER" = "$1" ] || return 0
  print_summary
  exit 0
}
# script_rows PREFIX NAME VARIABLE SCRIPT: runs SCRIPT with VARIABLE naming a file for its target
# rows ("what|measured|target|result"), prints what it printed but those rows, and adds them to
# the summary, PREFIX before each.
script_rows() {
  local prefix=$1 name=$2 variable=$3 script=$4 what measured target
  : > "$BUILD_DIR/$name.rows"
  env "$variable=$BUILD_DIR/$name.rows" "$script" > "$BUILD_DIR/$name.log" 2>&1 \
    || { tail -40 "$BUILD_DIR/$name.log"; fail "$script failed"; }
  grep -v '|' "$BUILD_DIR/$name.log" || true
  while IFS='|' read -r what measured target _; do
    # shellcheck disable=SC2086
    if [ "$target" = "-" ] || [ -z "$target" ]; then row "$prefix$what" "$measured"; else row "$prefix$what" "$measured" $target; fi
  done < "$BUILD_DIR/$name.rows"
}

# waited_share OUTPUT: the share of the timed milliseconds the backend spent waiting for a CPU.
waited_share() {
  awk '$1 == "waited" {w = $2; next} {t += $2} END { printf "%.0f%%", 100 * w / t }' <<<"$1"
}

# ---------------------------------------------------------------------------------------------
# What the benchmarks need beyond what test/bootstrap.sh installs, and the core benchmark.

for package in libbenchmark-dev libssl-dev libbloom-dev; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' \
    || fail "package $package is missing: apt-get install $package"
done
PG_CONFIG=${PG_CONFIG:-pg_config}
PGBENCH=$($PG_CONFIG --bindir)/pgbench
[ -x "$PGBENCH" ] || fail "pgbench not found in $($PG_CONFIG --bindir)"

if want d; then make --no-print-directory -s build/core_bench || fail "could not build build/core_bench"; fi

# ---------------------------------------------------------------------------------------------
# The cluster and its data.

# shellcheck source=SCRIPTDIR/cluster.sh
source bench/cluster.sh
trap cluster_cleanup_all EXIT
# Everything fits in shared_buffers; no JIT (its compile time would land on both sides of a
# ratio), no autovacuum or checkpoint during the runs.
cluster_start bench "shared_buffers = 1GB" "jit = off" "autovacuum = off" \
  "max_wal_size = 8GB" "checkpoint_timeout = 1h"

sql() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }

echo "bloomfilter benchmarks, $(date -u '+%Y-%m-%d %H:%M UTC')"
if git rev-parse --git-dir >/dev/null 2>&1; then
  changed=$(git status --porcelain --untracked-files=no -- src '*.sql' '*.control' | awk '{print $2}' | xargs)
  echo "source: commit $(git rev-parse --short HEAD)${changed:+, with uncommitted changes to $changed}"
fi
echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
echo "PostgreSQL $(sql -c 'SHOW server_version'), a throwaway cluster at 127.0.0.1:$PGPORT"
setup_started=$(date +%s)
sql -f bench/setup.sql >/dev/null
echo "setup: $(( $(date +%s) - setup_started )) s"

# The filter must be stored out of line and uncompressed, or the lookup would not read slices.
read -r filter_bytes compression toast_bytes < <(sql -F' ' -c "
  SELECT (bloom_info(f)).bytes, coalesce(pg_column_compression(f), 'none'),
         pg_relation_size(c.reltoastrelid)
  FROM filters, pg_class c WHERE c.relname = 'filters' AND filters.id = 1")
if [ "$compression" != none ] || [ "$toast_bytes" -lt "$filter_bytes" ]; then
  fail "the filter is not stored out of line uncompressed ($compression, toast $toast_bytes bytes)"
fi
[ "$(sql -c "SELECT bloom_contains(f, 'user7@mail.com') AND NOT bloom_contains(f, 'ghost@mail.com')
             FROM filters WHERE id = 1")" = t ] || fail "the stored filter gives wrong answers"
sql -c "SELECT 'filter: ' || bits || ' bits, k = ' || hashes || ', ' || bytes || ' bytes, '
               || inserted || ' keys, stored out of line uncompressed'
        FROM filters, bloom_info(f) WHERE id = 1"

# ---------------------------------------------------------------------------------------------
if want a; then
section "a) point lookup: pgbench -M prepared, 1 client, Unix socket, $LOOKUP_ROUNDS rounds of one $LOOKUP_SECONDS s run per query"
echo "keys: user<n>@mail.com, n random in [0, 2000000): half present, half absent"
echo "Each query runs alone (its code and data stay in the CPU caches), one after another in a"
echo "round, in an order that rotates from round to round; a ratio is taken within each round, so"
echo "both sides saw about the same load of the shared machine, and the median over rounds is kept."
# index: the README's form, the index named by a text literal (resolved at each call);
# index_regclass: the same check with a regclass (resolved once, when the statement is prepared).
lookups=(bloom index index_regclass index_partitioned select1 unique partitioned row)
declare -A lookup_label=(
  [bloom]="bloom_contains(f, email) FROM filters WHERE id = 1"
  [index]="bloom_index_contains('users_email_bloom', email)"
  [index_regclass]="bloom_index_contains('users_email_bloom'::regclass, email)"
  [index_partitioned]="bloom_index_contains on the 64-partition table's index"
  [select1]="SELECT 1"
  [unique]="EXISTS (... users WHERE email = ...), unique index"
  [partitioned]="EXISTS (... users_partitioned WHERE email = ...), 64 partitions"
  [row]="f IS NOT NULL FROM filters WHERE id = 1 (yardstick: no bloom_contains)"
)
# lookup_round SECONDS ROUND: one pgbench run per query, the order rotated by ROUND; prints
# "script TPS" for each.
lookup_round() {
  local seconds=$1 shift_by=$2 dir=$BUILD_DIR/pgbench_lookup n=${#lookups[@]} i script tps
  rm -rf "$dir" && mkdir -p "$dir"
  for i in $(seq 0 $(( n - 1 ))); do
    script=${lookups[$(( (i + shift_by) % n ))]}
    "$PGBENCH" -n -M prepared -c 1 -j 1 -T "$seconds" -h "$PGHOST" -p "$PGPORT" -U postgres \
      -f "bench/lookup_$script.sql" postgres >"$dir/$script.out" 2>&1 \
      || { cat "$dir/$script.out" >&2; fail "pgbench $script failed"; }
    tps=$(awk '/^tps = / {print $3; exit}' "$dir/$script.out")
    [ -n "$tps" ] || { cat "$dir/$script.out" >&2; fail "no tps from pgbench $script"; }
    echo "$script $tps"
  done
}
lookup_round 1 0 >/dev/null  # warm-up
declare -A lookup_runs
for round in $(seq 1 "$LOOKUP_ROUNDS"); do
  # Through a file, not a process substitution, whose subshell a failed pgbench would not stop.
  lookup_round "$LOOKUP_SECONDS" "$round" >"$BUILD_DIR/lookup_round.txt"
  while read -r script tps; do lookup_runs[$script]+="$tps "; done <"$BUILD_DIR/lookup_round.txt"
done
printf '%-72s %10s   %s\n' "query" "median TPS" "TPS round by round"
for script in "${lookups[@]}"; do
  # shellcheck disable=SC2086
  printf '%-72s %10.0f   %s\n' "${lookup_label[$script]}" "$(median ${lookup_runs[$script]})" \
    "$(printf '%.0f ' ${lookup_runs[$script]})"
done
declare -A lookup_ratio
for other in select1 unique partitioned row; do
  lookup_ratio[$other]=$(median_ratio "${lookup_runs[bloom]}" "${lookup_runs[$other]}")
  printf 'lookup / %-13s %7s   (round by round: %s)\n' "$other:" "${lookup_ratio[$other]}" \
    "$(paired_ratios "${lookup_runs[bloom]}" "${lookup_runs[$other]}" | xargs)"
done
row "a) lookup TPS / SELECT 1 TPS" "${lookup_ratio[select1]}" ">=" 0.85
row "a) lookup TPS / unique-index probe TPS" "${lookup_ratio[unique]}" ">=" 1.0
row "a) lookup TPS / 64-partition probe TPS" "${lookup_ratio[partitioned]}" ">=" 3
row "a) lookup TPS / row-fetch-only TPS (yardstick)" "${lookup_ratio[row]}"
index_select1=$(median_ratio "${lookup_runs[index]}" "${lookup_runs[select1]}")
index_unique=$(median_ratio "${lookup_runs[index]}" "${lookup_runs[unique]}")
index_partitioned=$(median_ratio "${lookup_runs[index_partitioned]}" "${lookup_runs[partitioned]}")
regclass_select1=$(median_ratio "${lookup_runs[index_regclass]}" "${lookup_runs[select1]}")
regclass_unique=$(median_ratio "${lookup_runs[index_regclass]}" "${lookup_runs[unique]}")
name_regclass=$(median_ratio "${lookup_runs[index]}" "${lookup_runs[index_regclass]}")
echo "bloom_index_contains, index by name / SELECT 1: $index_select1   (round by round:" \
  "$(paired_ratios "${lookup_runs[index]}" "${lookup_runs[select1]}" | xargs))"
echo "bloom_index_contains, index by name / unique probe: $index_unique;" \
  "on the 64 partitions' indexes / the 64-partition probe: $index_partitioned"
echo "bloom_index_contains, index as regclass / SELECT 1: $regclass_select1   (round by round:" \
  "$(paired_ratios "${lookup_runs[index_regclass]}" "${lookup_runs[select1]}" | xargs))"
echo "bloom_index_contains, index as regclass / unique probe: $regclass_unique;" \
  "by name / as regclass: $name_regclass"
row "a) bloom_index_contains TPS / SELECT 1 TPS" "$index_select1" ">=" 0.85
row "a) bloom_index_contains TPS / unique-index probe TPS" "$index_unique" ">=" 1.25
row "a) bloom_index_contains(...::regclass) TPS / SELECT 1 TPS (context)" "$regclass_select1"
row "a) bloom_index_contains by name / by regclass TPS (context)" "$name_regclass"
row "a) bloom_index_contains, 64-partition index / 64-partition probe TPS" "$index_partitioned" ">=" 4

# The check inside a statement, where no round trip hides its cost: 200,000 absent emails, each
# checked by bloom_index_contains (the index by name, resolved at each call, and as a regclass) and
# by an EXISTS probe of the unique index (a nested loop), the scan's own time subtracted; and the
# shared buffers each touches per check.
sql -c "CREATE TABLE absent_emails AS SELECT 'ghost' || i || '@mail.com' AS email FROM generate_series(1, 200000) i" \
    -c "VACUUM (FREEZE, ANALYZE) absent_emails" >/dev/null
inline_settings="SET max_parallel_workers_per_gather = 0; SET enable_hashjoin = off; SET enable_mergejoin = off"
inline_index="SELECT count(*) FROM absent_emails WHERE bloom_index_contains('users_email_bloom', email)"
inline_regclass="SELECT count(*) FROM absent_emails WHERE bloom_index_contains('users_email_bloom'::regclass, email)"
inline_composite="SELECT count(*) FROM absent_emails WHERE bloom_index_contains('users_id_email_bloom', 7, email)"
inline_probe="SELECT count(*) FROM absent_emails a WHERE EXISTS (SELECT 1 FROM users u WHERE u.email = a.email)"
inline_scan="SELECT count(*) FROM absent_emails WHERE length(email) < 0"
sql -c "$inline_settings" -c "EXPLAIN (COSTS OFF) $inline_probe" | grep -q 'Nested Loop' \
  || fail "the EXISTS probe is not a nested loop"
# The quoted literal must pick the text overload (resolved at each call), or the two rows would be one.
sql -c "EXPLAIN (VERBOSE, COSTS OFF) $inline_index" | grep -q "bloom_index_contains('users_email_bloom'::text" \
  || fail "bloom_index_contains('users_email_bloom', email) does not take the index's name as text"
inline=$(timed_queries "$ROUNDS" "$inline_settings" scan="$inline_scan" index="$inline_index" \
  regclass="$inline_regclass" composite="$inline_composite" probe="$inline_probe")
# shared_hits QUERY: the shared buffers the query touched.
shared_hits() {
  local plan
  plan=$(sql -c "$inline_settings" -c "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, FORMAT JSON) $1")
  python3 -c 'import json, sys; print(json.loads(sys.argv[1])[0]["Plan"]["Shared Hit Blocks"])' "$plan"
}
scan_buffers=$(shared_hits "$inline_scan")
# buffers_per_check QUERY: the shared buffers it touched beyond the scan's, per candidate.
buffers_per_check() {
  awk -v a="$(shared_hits "$1")" -v s="$scan_buffers" 'BEGIN {printf "%.2f", (a - s) / 200000}'
}
# per_check_us "SCAN_MS..." "QUERY_MS...": microseconds per candidate beyond the scan, round by round.
per_check_us() {
  paste <(tr -s ' ' '\n' <<<"$1" | grep .) <(tr -s ' ' '\n' <<<"$2" | grep .) \
    | awk 'NF == 2 { printf "%.4f\n", ($2 - $1) * 1000 / 200000 }' | xargs
}
index_runs=$(per_check_us "$(times_of "$inline" scan)" "$(times_of "$inline" index)")
regclass_runs=$(per_check_us "$(times_of "$inline" scan)" "$(times_of "$inline" regclass)")
composite_runs=$(per_check_us "$(times_of "$inline" scan)" "$(times_of "$inline" composite)")
probe_runs=$(per_check_us "$(times_of "$inline" scan)" "$(times_of "$inline" probe)")
# shellcheck disable=SC2086
index_us=$(median $index_runs)
# shellcheck disable=SC2086
regclass_us=$(median $regclass_runs)
# shellcheck disable=SC2086
probe_us=$(median $probe_runs)
index_ratio=$(median_ratio "$probe_runs" "$index_runs")
regclass_ratio=$(median_ratio "$probe_runs" "$regclass_runs")
index_buffers=$(buffers_per_check "$inline_index")
regclass_buffers=$(buffers_per_check "$inline_regclass")
probe_buffers=$(buffers_per_check "$inline_probe")
echo "inside a statement, per absent email: bloom_index_contains by name $index_us us ($index_buffers shared buffers)," \
  "as regclass $regclass_us us ($regclass_buffers shared buffers), unique-index probe $probe_us us" \
  "($probe_buffers shared buffers); the backend waited for a CPU $(waited_share "$inline") of the time"
echo "  us per check round by round: by name $index_runs; as regclass $regclass_runs; probe $probe_runs"
row "a) in a statement: unique-index probe us / bloom_index_contains us" "$index_ratio" ">=" 4
# shellcheck disable=SC2086
echo "  a composite (id, email) check by name: $(median $composite_runs) us; round by round: $composite_runs"
row "a) in a statement: composite (id, email) check us / one-column check us" \
  "$(median_ratio "$composite_runs" "$index_runs")" "<=" 1.1
row "a) in a statement: unique-index probe us / bloom_index_contains(...::regclass) us (context)" "$regclass_ratio"
row "a) in a statement: shared buffers per check, bloom_index_contains" "$index_buffers" "<=" 1
row "a) in a statement: shared buffers per check, unique-index probe (context)" "$probe_buffers"

fi
stop_after a

# ---------------------------------------------------------------------------------------------
if want b; then
section "b) batch check: 1,000,000 candidates (half present) against the stored filter, serial, $ROUNDS rounds"

batch_bloom="SELECT count(*) FROM candidates c, filters WHERE bloom_contains(f, c.email)"
batch_length="SELECT count(*) FROM candidates c, filters WHERE length(c.email) > filters.id"
plan_of() { sql -c "$serial_settings" -c "EXPLAIN (COSTS OFF) $1"; }
bloom_plan=$(plan_of "$batch_bloom")
length_plan=$(plan_of "$batch_length")
printf '  %s\n' "$bloom_plan" "" "$length_plan"
# The same plan but for the join filter's expression.
[ "$(grep -v 'Join Filter' <<<"$bloom_plan")" = "$(grep -v 'Join Filter' <<<"$length_plan")" ] \
  || fail "the two batch queries do not have the same plan shape"
positives=$(sql -c "$serial_settings" -c "$batch_bloom")
present=$(sql -c "SELECT count(*) FROM candidates c WHERE EXISTS (SELECT 1 FROM users u WHERE u.email = c.email)")
echo "bloom_contains is true for $positives candidates, $present of them present:" \
  "false-positive rate $(awk -v p="$positives" -v t="$present" -v n=1000000 'BEGIN {printf "%.4f", (p - t) / (n - t)}')"

batch_times=$(timed_queries "$ROUNDS" "$serial_settings" "bloom=$batch_bloom" "length=$batch_length")
for label in bloom length; do
  query=batch_$label
  # shellcheck disable=SC2046
  printf '%-80s %8.1f ms   (round by round: %s)\n' "${!query}" \
    "$(median $(times_of "$batch_times" $label))" "$(times_of "$batch_times" $label)"
done
batch_ratio=$(median_ratio "$(times_of "$batch_times" bloom)" "$(times_of "$batch_times" length)")
echo "bloom_contains / length: $batch_ratio   (round by round:" \
  "$(paired_ratios "$(times_of "$batch_times" bloom)" "$(times_of "$batch_times" length)" | xargs))"
echo "the backend waited for a CPU $(waited_share "$batch_times") of the time measured"
row "b) batch bloom_contains time / length() time" "$batch_ratio" "<=" 1.3

fi
stop_after b

# ---------------------------------------------------------------------------------------------
if want c; then
section "c) builds over users (1,000,000 distinct emails), $ROUNDS rounds"

builds=(count auto explicit)
declare -A build_expression=(
  [count]="count(email)"
  [auto]="bloom_agg(email)"
  [explicit]="bloom_agg(email, 1000000, 0.01)"
)
build_query() { echo "SELECT pg_column_size(${build_expression[$1]}) FROM users"; }
modes=(serial parallel)
declare -A memory_label=([serial]=serial [parallel]="2 workers, the leader's")

# Under the parallel settings every build must run with 2 workers.
for build in "${builds[@]}"; do
  plan=$(sql -c "$parallel_settings" -c "EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF) $(build_query "$build")")
  grep -q 'Workers Planned: 2' <<<"$plan" || { echo "$plan" >&2; fail "no parallel plan for ${build_expression[$build]}"; }
  echo "2-worker plan of ${build_expression[$build]}: Gather, 2 workers planned," \
    "$(awk '/Workers Launched:/ {print $3}' <<<"$plan") launched"
done

declare -A build_runs build_waited
for mode in "${modes[@]}"; do
  pairs=()
  for build in "${builds[@]}"; do pairs+=("$build=$(build_query "$build")"); done
  times=$(timed_queries "$ROUNDS" "${mode_settings[$mode]}" "${pairs[@]}")
  for build in "${builds[@]}"; do build_runs[$build,$mode]=$(times_of "$times" "$build"); done
  build_waited[$mode]=$(waited_share "$times")
done

# Peak memory: a fresh session per query reads its own VmHWM (/proc/self/status) before and
# after the query. It first runs count(email) serially, which maps every page of users in
# shared_buffers into the backend (shared pages count in VmHWM), and calls the extension once,
# so that loading its library (and the C++ runtime, about 3 MB) is not counted as the query's;
# then count(email) once more under the mode's settings. With 2 workers this is the leader's
# peak; the workers are other processes.
peak_kb() {
  sql <<EOF
$serial_settings;
SELECT count(email) FROM users \g /dev/null
SELECT bloom_contains(bloom_empty(1), 'x') \g /dev/null
${mode_settings[$2]};
SELECT count(email) FROM users \g /dev/null
SELECT bench_peak_kb() AS before \gset
$(build_query "$1") \g /dev/null
SELECT bench_peak_kb() - :before;
EOF
}
distinct=$(sql -c "SELECT count(DISTINCT email) FROM users")
bound_kb=$(awk -v f="$filter_bytes" -v d="$distinct" 'BEGIN {printf "%.0f", (f + 16 * d) / 1024}')
# The leader of a 2-worker plan of the auto-sized form holds more, 7 bytes a hash: every hash in
# its final state, its own third twice (its partial state and the bytes it serializes), the
# workers' two thirds as they arrive (their tuple queues' buffers), and one third again (the
# Aggregate node's copy of its first input row): about 19 bytes per key, bound at 24.
parallel_bound_kb=$(awk -v f="$filter_bytes" -v d="$distinct" 'BEGIN {printf "%.0f", (f + 24 * d) / 1024}')
declare -A memory_bound_kb=([auto,serial]=$bound_kb [auto,parallel]=$parallel_bound_kb
                            [explicit,serial]=$bound_kb [explicit,parallel]=$bound_kb)
declare -A build_peak
for mode in "${modes[@]}"; do
  for build in "${builds[@]}"; do build_peak[$build,$mode]=$(peak_kb "$build" "$mode"); done
done

declare -A build_ratio
printf '%-32s %-9s %9s %14s %12s   %s\n' "build" "mode" "median ms" "/ count(email)" "peak memory" "ms round by round"
for build in "${builds[@]}"; do
  for mode in "${modes[@]}"; do
    build_ratio[$build,$mode]=$(median_ratio "${build_runs[$build,$mode]}" "${build_runs[count,$mode]}")
    # shellcheck disable=SC2086
    printf '%-32s %-9s %9.1f %14s %9s MB   %s\n' "${build_expression[$build]}" "${mode_label[$mode]}" \
      "$(median ${build_runs[$build,$mode]})" "${build_ratio[$build,$mode]}" \
      "$(mb "${build_peak[$build,$mode]}")" "${build_runs[$build,$mode]}"
  done
done
declare -A build_speedup
for build in "${builds[@]}"; do
  build_speedup[$build]=$(median_ratio "${build_runs[$build,parallel]}" "${build_runs[$build,serial]}")
  echo "${build_expression[$build]}: 2 workers / serial = ${build_speedup[$build]}"
done
echo "the backend waited for a CPU ${build_waited[serial]} (serial) and ${build_waited[parallel]} (2 workers, the leader) of the time measured"
echo "memory bound: filter bytes + 16 bytes per distinct input = $filter_bytes + 16 x $distinct bytes = $(mb "$bound_kb") MB"
echo "memory bound of the auto-sized form's leader with 2 workers: filter bytes + 24 bytes per distinct input = $(mb "$parallel_bound_kb") MB"
echo "(peak memory: growth of the backend's VmHWM over the query; with 2 workers, the leader's)"
for build in auto explicit; do
  limit=2.5
  [ "$build" = explicit ] && limit=2.0
  for mode in "${modes[@]}"; do
    row "c) ${build_expression[$build]} time / count, ${mode_label[$mode]}" "${build_ratio[$build,$mode]}" "<=" "$limit"
  done
  row "c) ${build_expression[$build]} time, 2 workers / serial" "${build_speedup[$build]}" "<" 1
  for mode in "${modes[@]}"; do
    row "c) ${build_expression[$build]} peak MB, ${memory_label[$mode]}" \
      "$(mb "${build_peak[$build,$mode]}")" "<=" "$(mb "${memory_bound_kb[$build,$mode]}")"
  done
done
row "c) count(email) time, 2 workers / serial (yardstick)" "${build_speedup[count]}"

# The auto-sized form past work_mem: with work_mem = 1MB (2 MB of hashes with the default
# hash_mem_multiplier) its hashes go to a temporary file in sorted runs, merged at the end.
spill_settings="$serial_settings; SET work_mem = '1MB'; SET log_temp_files = 0"
spill_plan=$(sql -c "SET client_min_messages = log" -c "$spill_settings" -c "$(build_query auto)" 2>&1 >/dev/null)
grep -q 'temporary file' <<<"$spill_plan" || { echo "$spill_plan" >&2; fail "bloom_agg(email) did not spill with work_mem = 1MB"; }
echo "bloom_agg(email) with work_mem = 1MB: $(grep -c 'temporary file' <<<"$spill_plan") temporary file(s)," \
  "$(awk '/temporary file/ {s += $NF} END {printf "%.1f", s / 1048576}' <<<"$spill_plan") MB"
spill_times=$(timed_queries "$ROUNDS" "$spill_settings" "count=$(build_query count)" "auto=$(build_query auto)")
spill_ratio=$(median_ratio "$(times_of "$spill_times" auto)" "$(times_of "$spill_times" count)")
# shellcheck disable=SC2046
printf '%-32s %-9s %9.1f %14s   %s\n' "bloom_agg(email), work_mem 1MB" serial \
  "$(median $(times_of "$spill_times" auto))" "$spill_ratio" "$(times_of "$spill_times" auto)"
row "c) bloom_agg(email) time / count, spilling (work_mem 1MB)" "$spill_ratio" "<=" 4

# CREATE INDEX over the same 1,000,000 emails, serial builds (max_parallel_maintenance_workers
# = 0, as a bloomfilter build has no workers), each dropped in the same statement: a btree, the
# bloomfilter index (default capacity 1,000,000: 1.2 MB) in memory, and the same with
# maintenance_work_mem = 1MB, below the filter's size, built from its keys' hashes sorted. The
# btree keeps the default maintenance_work_mem in both ratios.
index_settings="$serial_settings; SET max_parallel_maintenance_workers = 0"
index_btree="CREATE INDEX bench_build_btree ON users (email); DROP INDEX bench_build_btree"
index_memory="CREATE INDEX bench_build_bloom ON users USING bloomfilter (email); DROP INDEX bench_build_bloom"
index_sorted="SET maintenance_work_mem = '1MB'; $index_memory; RESET maintenance_work_mem"
index_times=$(timed_queries "$ROUNDS" "$index_settings" "btree=$index_btree" "memory=$index_memory" "sorted=$index_sorted")
for label in btree memory sorted; do
  # shellcheck disable=SC2046
  printf '%-32s %9.1f ms   (round by round: %s)\n' "$label" \
    "$(median $(times_of "$index_times" $label))" "$(times_of "$index_times" $label)"
done
index_memory_ratio=$(median_ratio "$(times_of "$index_times" memory)" "$(times_of "$index_times" btree)")
index_sorted_ratio=$(median_ratio "$(times_of "$index_times" sorted)" "$(times_of "$index_times" btree)")
echo "bloomfilter / btree CREATE INDEX: $index_memory_ratio in memory, $index_sorted_ratio with maintenance_work_mem = 1MB"
row "c) CREATE INDEX bloomfilter / btree time, in memory" "$index_memory_ratio" "<=" 0.2
row "c) CREATE INDEX bloomfilter / btree time, sorted (1MB)" "$index_sorted_ratio" "<=" 0.5

fi
cluster_stop bench
stop_after c

# ---------------------------------------------------------------------------------------------
if want d; then
section "d) C++ core vs libbloom and the article's algorithm (Google Benchmark, median of 5 repetitions in random order, CPU time)"

build/core_bench --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true \
  --benchmark_report_aggregates_only=true \
  --benchmark_out="$BUILD_DIR/core_bench.csv" --benchmark_out_format=csv >"$BUILD_DIR/core_bench.log" 2>&1 \
  || { cat "$BUILD_DIR/core_bench.log" >&2; fail "core_bench failed"; }
grep -v -e '_stddev' -e '_cv ' -e '_mean ' "$BUILD_DIR/core_bench.log"
declare -A ns
# median_ns CSV: "name nanoseconds" for each benchmark's median CPU time (Google Benchmark's CSV:
# name,iterations,real_time,cpu_time,time_unit,...; the median's name ends in _median).
median_ns() {
  awk -F, '$1 ~ /_median"$/ {
    name = $1; gsub(/"/, "", name); sub(/_median$/, "", name)
    scale = $5 == "us" ? 1e3 : $5 == "ms" ? 1e6 : $5 == "s" ? 1e9 : 1
    print name, $4 * scale }' "$1"
}
while read -r name value; do ns[$name]=$value; done < <(median_ns "$BUILD_DIR/core_bench.csv")
for name in BM_core_add BM_core_contains BM_core_hash BM_core_contains_cached BM_core_contains_scalar \
  BM_core_contains_v1 BM_libbloom_add BM_libbloom_contains BM_article_add BM_article_contains; do
  [ -n "${ns[$name]:-}" ] || fail "no result for $name in $BUILD_DIR/core_bench.csv"
done
# Each filter's line from core_bench: "filter NAME: BYTES bytes, B bits per key, k = K,
# false-positive rate R%; ...".
declare -A filter_bytes_of filter_rate_of
for filter in core libbloom article; do
  read -r filter_bytes_of[$filter] filter_rate_of[$filter] < <(sed -n \
    "s/^filter $filter: \([0-9]*\) bytes, .* false-positive rate \([0-9.]*\)%.*/\1 \2/p" "$BUILD_DIR/core_bench.log")
  [ -n "${filter_rate_of[$filter]:-}" ] || fail "no false-positive rate for $filter in $BUILD_DIR/core_bench.log"
done
chosen_path=$(sed -n 's/^core: contains checks blocks with \([a-z0-9]*\);.*/\1/p' "$BUILD_DIR/core_bench.log")
[ -n "$chosen_path" ] || fail "core_bench did not say which check it chose"
declare -A filter_label=([core]="core" [libbloom]="libbloom" [article]="the article's")
printf '%-16s %14s %10s %20s %14s\n' "" "contains ns/op" "add ns/op" "false-positive rate" "memory bytes"
for filter in core libbloom article; do
  printf '%-16s %14.1f %10.1f %19s%% %14s\n' "${filter_label[$filter]}" "${ns[BM_${filter}_contains]}" \
    "${ns[BM_${filter}_add]}" "${filter_rate_of[$filter]}" "${filter_bytes_of[$filter]}"
done
echo "(1,000,000 keys at p = 0.01, packed in one buffer; contains probes half present, in random order;"
echo " false-positive rates over 1,000,000 keys never added)"
printf 'core contains / libbloom: %s; / the article'"'"'s: %s. core add / libbloom: %s; / the article'"'"'s: %s\n' \
  "$(ratio "${ns[BM_core_contains]}" "${ns[BM_libbloom_contains]}")" "$(ratio "${ns[BM_core_contains]}" "${ns[BM_article_contains]}")" \
  "$(ratio "${ns[BM_core_add]}" "${ns[BM_libbloom_add]}")" "$(ratio "${ns[BM_core_add]}" "${ns[BM_article_add]}")"
printf 'core contains, parts: hashing the key %.1f ns/op; contains with 1,024 probes cycling (their blocks cached) %.1f ns/op\n' \
  "${ns[BM_core_hash]}" "${ns[BM_core_contains_cached]}"
path_ns() {  # path_ns NAME: the forced path's ns/op, or "-" where the CPU lacks it
  local value=${ns[BM_core_contains_$1]:-}
  if [ -n "$value" ]; then printf '%.1f' "$value"; else echo "-"; fi
}
printf 'core contains through each way of checking a block, forced: scalar %s, avx2 %s, avx512 %s ns/op ("-": not on this CPU)\n' \
  "$(path_ns scalar)" "$(path_ns avx2)" "$(path_ns avx512)"
echo "contains uses $chosen_path, $(sed -n 's/^core: contains checks blocks with [a-z0-9]*; //p' "$BUILD_DIR/core_bench.log")"
printf 'core contains on the same keys in a format version 1 filter (XXH3-128, scalar loop): %.1f ns/op\n' \
  "${ns[BM_core_contains_v1]}"
cpu_line
row "d) core contains ns/op" "$(printf '%.1f' "${ns[BM_core_contains]}")" "<=" 25
row "d) core contains / libbloom's check, same keys and p" \
  "$(ratio "${ns[BM_core_contains]}" "${ns[BM_libbloom_contains]}")" "<=" 0.33
row "d) core contains / the scalar loop, on the path dispatch chose ($chosen_path)" \
  "$(ratio "${ns[BM_core_contains]}" "${ns[BM_core_contains_scalar]}")" "<=" 1.0
if [ "$(path_ns avx2)" != "-" ]; then
  row "d) core contains ns/op through AVX2 (forced: an AVX2-only CPU's figure)" "$(path_ns avx2)" "<=" 20
else
  row "d) core contains ns/op through AVX2 (not on this CPU)" "-"
fi
row "d) core false-positive rate % at n = 1M, p = 0.01" "${filter_rate_of[core]}" "<=" 1.05
row "d) core contains speedup over the article's" "$(ratio "${ns[BM_article_contains]}" "${ns[BM_core_contains]}")" ">=" 20
row "d) core add ns/op" "$(printf '%.1f' "${ns[BM_core_add]}")"
row "d) core add / libbloom's add" "$(ratio "${ns[BM_core_add]}" "${ns[BM_libbloom_add]}")"
row "d) core add speedup over the article's" "$(ratio "${ns[BM_article_add]}" "${ns[BM_core_add]}")"

fi
stop_after d

# ---------------------------------------------------------------------------------------------
if want e; then
section "e) signups at 8 clients: plain INSERT, single-row filter, 64 shards, bloomfilter index (t/006_signups.pl)"
echo "plain INSERT and INSERT with the bloomfilter index run three times each, alternated; their"
echo "ratio is the median of the ratios of adjacent runs"
SIGNUP_SECONDS=${BENCH_SIGNUP_SECONDS:-6}
BLOOMFILTER_SIGNUP_SECONDS=$SIGNUP_SECONDS \
  BLOOMFILTER_SIGNUP_VARIANTS="plain index single sharded plain index reindex plain index" \
  test/run-tap.sh -v t/006_signups.pl | sed -n 's/^# \(variant\|plain\|single\|sharded\|index\|reindex\) /\1 /p' \
  | tee "$BUILD_DIR/signups.log" || fail "t/006_signups.pl failed"
declare -A signups_runs signups_rate signups_wal signups_fn
while read -r variant rate wal _ _ _ fn; do
  signups_runs[$variant]+="$rate "; signups_wal[$variant]=$wal
  signups_fn[$variant]=$(( ${signups_fn[$variant]:-0} + fn ))
done < <(grep -E '^(plain|single|sharded|index|reindex) ' "$BUILD_DIR/signups.log")
for v in plain single sharded index reindex; do
  # shellcheck disable=SC2086
  signups_rate[$v]=$(median ${signups_runs[$v]})
  row "e) signups/s, ${v}" "${signups_rate[$v]}"
done
row "e) signups/s, 64 shards / single-row filter" "$(ratio "${signups_rate[sharded]}" "${signups_rate[single]}")" ">=" 3
row "e) signups/s, INSERT with the bloomfilter index / plain INSERT" \
  "$(median_ratio "${signups_runs[index]}" "${signups_runs[plain]}")" ">=" 0.85
row "e) WAL bytes per signup, bloomfilter index / plain INSERT" \
  "$(ratio "${signups_wal[index]}" "${signups_wal[plain]}")" "<=" 1.5
row "e) WAL bytes per signup, 64 shards / single-row filter" \
  "$(ratio "${signups_wal[sharded]}" "${signups_wal[single]}")" "<=" 0.05
for v in plain single sharded index; do
  row "e) WAL bytes per signup, ${v}" "${signups_wal[$v]}"
done
row "e) false negatives after the concurrent runs" \
  "$(( ${signups_fn[single]} + ${signups_fn[sharded]} + ${signups_fn[index]} + ${signups_fn[reindex]} ))" "<=" 0

fi
stop_after e

if want f; then
section "f) one filter over three nodes (t/007_multinode.pl, MULTINODE_BENCH=1)"
MULTINODE_BENCH=1 test/run-tap.sh -v t/007_multinode.pl > "$BUILD_DIR/multinode.log" 2>&1 \
  || { tail -40 "$BUILD_DIR/multinode.log"; fail "t/007_multinode.pl failed"; }
sed -n 's/^# row: //p' "$BUILD_DIR/multinode.log" > "$BUILD_DIR/multinode.rows"
sed -n 's/^# \{0,1\}//p' "$BUILD_DIR/multinode.log" | sed -n '/== build times/,/== signup pre-check/p' | sed '$d'
while IFS='|' read -r what measured _ _; do
  row "f) ${what#e) multinode: }" "$measured"
done < "$BUILD_DIR/multinode.rows"

fi
stop_after f

# ---------------------------------------------------------------------------------------------
if want g; then
section "g) the Python client: checks in the application (bench/python_client.sh)"
script_rows "g) " python PYTHON_CLIENT_SUMMARY_FILE bench/python_client.sh

fi
stop_after g

# ---------------------------------------------------------------------------------------------
if want h; then
section "h) the Node.js client: checks in the application (bench/node_client.sh)"
script_rows "h) " node NODE_CLIENT_SUMMARY_FILE bench/node_client.sh

fi
stop_after h

# ---------------------------------------------------------------------------------------------
if want i; then
section "i) an index that grows by itself (bench/growth.sh)"
script_rows "" growth GROWTH_SUMMARY_FILE bench/growth.sh
fi

stop_after i

# ---------------------------------------------------------------------------------------------
if want j; then
section "j) bloom_agg under GROUP BY (bench/groupby.sh, a cluster of its own)"
script_rows "j) " groupby GROUPBY_SUMMARY_FILE bench/groupby.sh
fi

# ---------------------------------------------------------------------------------------------
print_summary
exit 0
