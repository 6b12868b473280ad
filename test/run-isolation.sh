#!/usr/bin/env bash
# The isolation specs (specs/*.spec, listed in ISOLATION) on a throwaway cluster, run after the
# extension is installed; on a failure, the differences from the expected output are printed.
# test/run-regress.sh runs them too, after the pg_regress suite.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/cluster.sh
trap cluster_cleanup_all EXIT
cluster_start isolation
mkdir -p build/isolation
rm -f build/isolation/regression.diffs
# REGRESS emptied: installcheck runs the isolation specs alone.
if ! make -s installcheck REGRESS= PG_CONFIG="$PG_CONFIG"; then
  [ -f build/isolation/regression.diffs ] && cat build/isolation/regression.diffs
  exit 1
fi
