#!/usr/bin/env bash
# The pg_regress suite on a throwaway cluster (run after the extension is installed), with the
# isolation specs (ISOLATION in the Makefile, specs/*.spec) when there are some; then the suite
# again on a schema installed at 1.0 and updated step by step.
#   test/run-regress.sh [--fresh-only] [NAME ...]
# NAME: a file of the suite (sql/NAME.sql) or an isolation spec (specs/NAME.spec); without any,
# everything the Makefile lists. --fresh-only: not the run on the updated schema.
set -euo pipefail
cd "$(dirname "$0")/.."
fresh_only=
regress=() isolation=()
for arg in "$@"; do
  case $arg in
    --fresh-only) fresh_only=1 ;;
    -*) echo "usage: $0 [--fresh-only] [NAME ...]" >&2; exit 2 ;;
    *)
      if [ -f "sql/$arg.sql" ]; then regress+=("$arg")
      elif [ -f "specs/$arg.spec" ]; then isolation+=("$arg")
      else echo "$arg: neither sql/$arg.sql nor specs/$arg.spec" >&2; exit 2
      fi ;;
  esac
done
chosen=()
if [ ${#regress[@]} -gt 0 ] || [ ${#isolation[@]} -gt 0 ]; then
  chosen=("REGRESS=${regress[*]}" "ISOLATION=${isolation[*]}")
fi
. bench/cluster.sh
trap cluster_cleanup_all EXIT
cluster_start regress "max_parallel_workers_per_gather = 2" "max_worker_processes = 8"
mkdir -p build/regress build/regress-upgrade
# Runs REGRESS, then the isolation specs (ISOLATION).
rm -f build/regress/regression.diffs build/isolation/regression.diffs
if ! make -s installcheck PG_CONFIG="$PG_CONFIG" "${chosen[@]}"; then
  [ ! -f build/regress/regression.diffs ] || head -200 build/regress/regression.diffs
  [ ! -f build/isolation/regression.diffs ] || cat build/isolation/regression.diffs
  exit 1
fi
[ -z "$fresh_only" ] || exit 0

# The same suite on a schema installed at the oldest version and updated step by step.
echo "== the suite again, after CREATE EXTENSION bloomfilter VERSION '1.0' and ALTER EXTENSION UPDATE"
createdb bloomfilter_upgrade
psql -X -q -d bloomfilter_upgrade -f test/upgrade/from-1.0.sql
if [ ${#chosen[@]} -gt 0 ]; then
  tests=${regress[*]}
else
  tests=$(make -s --no-print-directory regress-list)
fi
[ -n "$tests" ] || exit 0
if ! "$($PG_CONFIG --pkglibdir)/pgxs/src/test/regress/pg_regress" --bindir="$PG_BIN" --inputdir=. \
     --outputdir=build/regress-upgrade --use-existing --dbname=bloomfilter_upgrade $tests; then
  [ -f build/regress-upgrade/regression.diffs ] && head -200 build/regress-upgrade/regression.diffs
  exit 1
fi
