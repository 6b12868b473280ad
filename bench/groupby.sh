#!/usr/bin/env bash
# bloom_agg under GROUP BY, on a throwaway cluster (bench/run.sh runs it in section c; it runs on
# its own too). All the groups of one bloom_agg share work_mem x hash_mem_multiplier.
#
# Shapes over a table of bigint keys (groups x keys a group; the last is the README's sharding
# recipe, GROUP BY bloom_shard), each at 4 work_mem settings, serial and with 2 workers, hashed
# (enable_sort = off):
# - HashAggregate's peak "Memory Usage" (the largest of the leader's and the workers') against
#   1.1 x hash_mem (or count(k)'s peak where that is larger);
# - the leader's peak RSS growth over count(k) with the same grouping, less the bytes of the
#   values bloom_agg returns (the same at every work_mem), against hash_mem + 16 MiB;
# - the time against count(DISTINCT k) with the same grouping (which the planner sorts), the
#   median of BENCH_GROUPBY_ROUNDS (5) rounds.
# BENCH_GROUPBY_SCALE (default 0.25) scales the keys a group: 1 gives 100,000 x 100,
# 10 x 2,000,000, 1,000 x 20,000 and 64 x 1,000,000.
# Prints a table and the rows "what|measured|target|result"; with GROUPBY_SUMMARY_FILE set,
# appends the rows there. Needs the extension installed.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=SCRIPTDIR/lib.sh
source bench/lib.sh
# shellcheck source=SCRIPTDIR/cluster.sh
source bench/cluster.sh
trap cluster_cleanup_all EXIT
cluster_start groupby_bench "shared_buffers = 1GB" "jit = off" "autovacuum = off" \
  "max_wal_size = 8GB" "checkpoint_timeout = 1h"
sql() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
rows_out=()
row() { rows_out+=("$1|$2|$3 $4|$(verdict "$2" "$3" "$4")"); }
echo "machine: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
sql -c "CREATE EXTENSION bloomfilter" -f bench/functions.sql >/dev/null

groupby_scale=${BENCH_GROUPBY_SCALE:-0.25}
groupby_rounds=${BENCH_GROUPBY_ROUNDS:-5}
groupby_shapes=("100000 100" "10 2000000" "1000 20000" "64 1000000")
scaled() { awk -v p="$1" -v s="$groupby_scale" 'BEGIN {printf "%d", (p * s < 1 ? 1 : p * s)}'; }
groupby_rows=0
for shape in "${groupby_shapes[@]}"; do
  read -r g p <<<"$shape"
  p=$(scaled "$p")
  [ $(( g * p )) -gt "$groupby_rows" ] && groupby_rows=$(( g * p ))
done
# pg_prewarm keeps the whole table in shared_buffers (a sequential scan of a table past a quarter
# of them reads through a small ring of buffers), so that the serial count(k) each RSS session
# starts with maps every page of it into the backend: a parallel leader's own share of the pages
# differs from one query to the next, and shared pages count in VmHWM.
# Statistics on each shape's grouping expression tell the planner how many groups there are: without
# them it expects a group a row, and with 2 workers gathers the rows to one HashAggregate instead of
# aggregating in the workers (Partial HashAggregate) and combining in the leader.
group_expression() { if [ "$1" = 64 ]; then echo "bloom_shard(k, 64)"; else echo "k % $1"; fi; }
sql -c "CREATE TABLE groupby_keys AS SELECT generate_series(1::bigint, $groupby_rows) AS k" >/dev/null
for shape in "${groupby_shapes[@]}"; do
  read -r g p <<<"$shape"
  sql -c "CREATE STATISTICS groupby_keys_$g ON ($(group_expression "$g")) FROM groupby_keys" >/dev/null
done
sql -c "VACUUM ANALYZE groupby_keys" -c "CREATE EXTENSION IF NOT EXISTS pg_prewarm" \
  -c "SELECT pg_prewarm('groupby_keys')" >/dev/null
hash_mem_multiplier=$(sql -c "SHOW hash_mem_multiplier")
# hashagg_peak SETTINGS QUERY: the largest HashAggregate "Peak Memory Usage" of the plan, in kB
# (the leader's or a worker's).
hashagg_peak() {
  sql -c "$1" -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, VERBOSE, FORMAT JSON) $2" |
    grep -oE '"Peak Memory Usage": [0-9]+' | awk '{ if ($4 > m) m = $4 } END {print m + 0}'
}
printf '%-18s %-8s %-9s %11s %9s %9s %11s %9s %10s\n' "groups x keys" "work_mem" "mode" \
  "HashAgg kB" "bound kB" "RSS MiB" "results MiB" "bloom ms" "/ distinct"
groupby_worst_memory=0 groupby_worst_rss=-1e9 groupby_worst_raw=-1e9 groupby_worst_time=0
for shape in "${groupby_shapes[@]}"; do
  read -r g p <<<"$shape"
  p=$(scaled "$p")
  group_by=$(group_expression "$g")
  from="groupby_keys WHERE k <= $(( g * p ))"
  bloom="SELECT $group_by, bloom_agg(k) FROM $from GROUP BY 1"
  results_kb=$(sql -c "SELECT sum((bloom_info(f)).bytes) / 1024 FROM ($bloom) r(g, f)")
  for work_mem in 64kB 4MB 16MB 64MB; do
    work_mem_kb=$(awk -v w="$work_mem" 'BEGIN {n = w + 0; if (w ~ /MB/) n *= 1024; print n}')
    hash_mem_kb=$(awk -v w="$work_mem_kb" -v m="$hash_mem_multiplier" 'BEGIN {printf "%d", w * m}')
    for mode in serial parallel; do
      settings="${mode_settings[$mode]}; SET enable_sort = off; SET work_mem = '$work_mem'"
      peak=$(hashagg_peak "$settings" "$bloom")
      label=${mode_label[$mode]}
      [ "$mode" = parallel ] && ! sql -c "$settings" -c "EXPLAIN (COSTS OFF) $bloom" | grep -q 'Partial HashAggregate' &&
        label="$label, not partial"
      # At the smallest work_mem HashAggregate's own structures pass hash_mem with count(k) too:
      # the bound is 1.1 x the larger of hash_mem and count(k)'s peak.
      count_peak=$(hashagg_peak "$settings" "SELECT $group_by, count(k) FROM $from GROUP BY 1")
      bound_kb=$(awk -v h="$hash_mem_kb" -v c="$count_peak" 'BEGIN {printf "%d", 1.1 * (c > h ? c : h)}')
      rss=$(sql <<SQL
$serial_settings;
SELECT count(k) FROM groupby_keys \g /dev/null
$settings;
SELECT bloom_contains(bloom_empty(1), 'x') \g /dev/null
SELECT $group_by, count(k) FROM $from GROUP BY 1 \g /dev/null
SELECT bench_peak_kb() AS before \gset
$bloom \g /dev/null
SELECT bench_peak_kb() - :before;
SQL
)
      times=$(timed_queries "$groupby_rounds" "$settings" "bloom=$bloom" \
        "distinct=SELECT $group_by, count(DISTINCT k) FROM $from GROUP BY 1")
      ratio=$(median_ratio "$(times_of "$times" bloom)" "$(times_of "$times" distinct)")
      # shellcheck disable=SC2046
      printf '%-18s %-8s %-9s %11s %9s %9s %11s %9.0f %10s\n' "$g x $p" "$work_mem" "$label" \
        "$peak" "$bound_kb" "$(mb "$rss")" "$(mb "$results_kb")" \
        "$(median $(times_of "$times" bloom))" "$ratio"
      groupby_worst_memory=$(awk -v a="$groupby_worst_memory" -v p="$peak" -v b="$bound_kb" 'BEGIN {r = 1.1 * p / b; print (r > a ? r : a)}')
      groupby_worst_rss=$(awk -v a="$groupby_worst_rss" -v r="$rss" -v v="$results_kb" -v h="$hash_mem_kb" 'BEGIN {x = (r - v - h) / 1024; print (x > a ? x : a)}')
      groupby_worst_raw=$(awk -v a="$groupby_worst_raw" -v r="$rss" -v h="$hash_mem_kb" 'BEGIN {x = (r - h) / 1024; print (x > a ? x : a)}')
      groupby_worst_time=$(awk -v a="$groupby_worst_time" -v r="$ratio" 'BEGIN {print (r > a ? r : a)}')
    done
  done
done
echo "(HashAgg kB: the largest HashAggregate peak in the plan, the leader's or a worker's; RSS: the leader's peak growth over count(k) with the same grouping; results: the bytes of the values bloom_agg returns; bloom ms: the median of $groupby_rounds timed runs, and the ratio the median of theirs)"
row "GROUP BY: HashAggregate peak / max(hash_mem, count(k)'s), worst row" "$(printf '%.2f' "$groupby_worst_memory")" "<=" 1.1
row "GROUP BY: leader RSS growth - result values - hash_mem (MiB), worst row" "$(printf '%.1f' "$groupby_worst_rss")" "<=" 16
rows_out+=("GROUP BY: leader RSS growth - hash_mem (MiB), the results not taken off, worst row|$(printf '%.1f' "$groupby_worst_raw")|-|-")
row "GROUP BY: time / count(DISTINCT), worst row" "$groupby_worst_time" "<=" 1.5

echo
printf '%s\n' "${rows_out[@]}"
if [ -n "${GROUPBY_SUMMARY_FILE:-}" ]; then printf '%s\n' "${rows_out[@]}" >> "$GROUPBY_SUMMARY_FILE"; fi
