# shellcheck shell=bash
# Helpers of the benchmark scripts (bench/run.sh, bench/groupby.sh, bench/python_client.sh):
# statistics, comparisons, timed queries and the CPU. Source it; timed_queries needs sql() and
# bench/functions.sql.

# median NUMBER...
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {
  if (NR == 0) exit 1; if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# cpu_line: the CPU's model and its vector extensions the checks use (a run's figures depend on
# them: the batches' AVX-512 paths, the core's AVX2 and AVX-512 block checks).
cpu_line() {
  echo "CPU: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1), flags:" \
    "$(grep -o -w -e avx2 -e avx512f -e avx512dq /proc/cpuinfo 2>/dev/null | sort -u | xargs)"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
mb() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
# paired_ratios "A1 A2 ..." "B1 B2 ...": A1/B1, A2/B2, ... one a line.
paired_ratios() {
  paste <(tr -s ' ' '\n' <<<"$1" | grep .) <(tr -s ' ' '\n' <<<"$2" | grep .) \
    | awk 'NF == 2 { printf "%.3f\n", $1 / $2 }'
}
# median_ratio "A..." "B...": the median of the paired ratios.
median_ratio() {
  # shellcheck disable=SC2046
  median $(paired_ratios "$1" "$2") | awk '{ printf "%.3f", $1 }'
}
# verdict VALUE OP TARGET -> PASS or MISS, OP one of >= <= <
verdict() {
  awk -v v="$1" -v op="$2" -v t="$3" 'BEGIN {
    ok = op == ">=" ? v >= t : op == "<=" ? v <= t : v < t; print ok ? "PASS" : "MISS" }'
}
# timed_queries ROUNDS SETTINGS LABEL=QUERY ...: in one session, one untimed run of each query,
# then ROUNDS rounds of all of them in rotating order. Prints "LABEL milliseconds" lines, and
# "waited milliseconds": how long the backend waited for a CPU over the timed runs.
timed_queries() {
  local rounds=$1 settings=$2; shift 2
  local pairs=("$@") n=$# script="" round i pair
  for pair in "${pairs[@]}"; do
    script+="SELECT bench_ms(\$q\$${pair#*=}\$q\$) \\g /dev/null"$'\n'
  done
  script+="SELECT bench_cpu_wait_ms() AS wait_before \\gset"$'\n'
  for round in $(seq 1 "$rounds"); do
    for i in $(seq 0 $(( n - 1 ))); do
      pair=${pairs[$(( (i + round - 1) % n ))]}
      script+="SELECT '${pair%%=*}', bench_ms(\$q\$${pair#*=}\$q\$);"$'\n'
    done
  done
  script+="SELECT 'waited', bench_cpu_wait_ms() - :wait_before;"$'\n'
  sql -F' ' -c "$settings" -f - <<<"$script"
}
# times_of OUTPUT LABEL: the LABEL's milliseconds, round by round.
times_of() { awk -v l="$2" '$1 == l {print $2}' <<<"$1" | xargs; }

# The plans the benchmarks compare: serial, and with 2 workers whatever the table's size.
serial_settings="SET max_parallel_workers_per_gather = 0"
parallel_settings="SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0;
  SET min_parallel_table_scan_size = 0; SET max_parallel_workers_per_gather = 2"
# shellcheck disable=SC2034  # read by the scripts that source this file
declare -A mode_settings=([serial]=$serial_settings [parallel]=$parallel_settings)
# shellcheck disable=SC2034
declare -A mode_label=([serial]=serial [parallel]="2 workers")
