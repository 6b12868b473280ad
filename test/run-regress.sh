#!/usr/bin/env bash
# The pg_regress suite on a throwaway cluster (run after the extension is installed).
set -euo pipefail
cd "$(dirname "$0")/.."
. test/cluster.sh
trap cluster_cleanup_all EXIT
cluster_start regress "max_parallel_workers_per_gather = 2" "max_worker_processes = 8"
mkdir -p build/regress
if ! make -s installcheck PG_CONFIG="$PG_CONFIG"; then
  [ -f build/regress/regression.diffs ] && head -200 build/regress/regression.diffs
  exit 1
fi
