#!/usr/bin/env bash
# The Node.js client's tests (clients/node/test, node --test) against a throwaway cluster with
# the installed extension: the golden vectors, answers, bytes and errors equal to the server's,
# the pg and postgres.js adapters, and the index follower. Installs the package's dependencies
# with npm ci (package-lock.json) and compiles the TypeScript first. Arguments go to node --test
# (e.g. --test-name-pattern=follow).
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in node npm; do
  command -v "$tool" >/dev/null || { echo "missing: $tool (apt-get install -y nodejs npm)" >&2; exit 1; }
done
# bench/cluster.sh makes the cluster UTF8 in C.UTF-8; each test file also creates its database
# with ENCODING 'UTF8' LOCALE 'C.UTF-8'.
. bench/cluster.sh
trap cluster_cleanup_all EXIT
cluster_start node "max_connections = 60"
# test/pgbouncer.mjs puts its PgBouncer processes' directories with the clusters'.
export CLUSTER_ROOT BLOOM_TEST_USER
cd clients/node
npm ci --no-audit --no-fund --loglevel=error
node scripts/build.mjs
node --test "$@" test/*.test.mjs
