#!/usr/bin/env bash
# The pg_regress suite on a throwaway cluster (run after the extension is installed).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/cluster.sh
trap cluster_cleanup_all EXIT
cluster_start regress "max_parallel_workers_per_gather = 2" "max_worker_processes = 8"
mkdir -p build/regress build/regress-upgrade
# Runs REGRESS, then the isolation specs (ISOLATION).
rm -f build/regress/regression.diffs build/isolation/regression.diffs
if ! make -s installcheck PG_CONFIG="$PG_CONFIG"; then
  [ -f build/regress/regression.diffs ] && head -200 build/regress/regression.diffs
  [ -f build/isolation/regression.diffs ] && cat build/isolation/regression.diffs
  exit 1
fi

# The same suite on a schema installed at the oldest version and updated step by step.
echo "== the suite again, after CREATE EXTENSION bloomfilter VERSION '1.0' and ALTER EXTENSION UPDATE"
createdb bloomfilter_upgrade
psql -X -q -d bloomfilter_upgrade -f test/upgrade/from-1.0.sql
tests=$(make -s --no-print-directory regress-list)
if ! "$($PG_CONFIG --pkglibdir)/pgxs/src/test/regress/pg_regress" --bindir="$PG_BIN" --inputdir=. \
     --outputdir=build/regress-upgrade --use-existing --dbname=bloomfilter_upgrade $tests; then
  [ -f build/regress-upgrade/regression.diffs ] && head -200 build/regress-upgrade/regression.diffs
  exit 1
fi
