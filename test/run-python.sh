#!/usr/bin/env bash
# The Python client's tests (clients/python/tests, pytest) against a throwaway cluster with the
# installed extension: answers, bytes and errors equal to the server's, the golden vectors, the
# adapters and the index follower. Arguments go to pytest (e.g. -k follow, -x).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-/usr/bin/python3}
missing=()
for module in xxhash numpy psycopg psycopg_pool psycopg2 asyncpg sqlalchemy django pytest gunicorn setuptools wheel; do
  "$PYTHON" -c "import $module" 2>/dev/null || missing+=("python3-${module//_/-}")
done
# Python's headers, for the compiled check (bloomfilter._native).
[ -f "$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')/Python.h" ] ||
  missing+=(python3-dev)
if [ ${#missing[@]} -gt 0 ]; then
  echo "missing Debian packages: ${missing[*]} (apt-get install -y ${missing[*]})" >&2
  exit 1
fi
# The compiled check (bloomfilter._native, from src/core), built in place and required here: the
# tests run both it and the pure-Python check (where they compare them, they force the latter).
(cd clients/python && "$PYTHON" setup.py -q build_ext --inplace 2>&1 | grep -v BetaConfiguration) || true
if ! (cd clients/python && "$PYTHON" -c 'import bloomfilter._native'); then
  echo "the compiled check (clients/python/src/native.cpp) did not build: see above" >&2
  exit 1
fi
export BLOOMFILTER_NATIVE_REQUIRED=1
unset BLOOMFILTER_NATIVE
. bench/cluster.sh
trap cluster_cleanup_all EXIT
cluster_start python "max_connections = 60"
# The tests start clusters of their own too (tests/clusters.py).
export PG_BIN CLUSTER_ROOT BLOOM_TEST_USER
cd clients/python
# Bytecode and pytest's cache stay out of the source tree, and its temporary directories (tmp_path)
# go with the clusters' directory, not into /tmp/pytest-of-$USER.
PYTHONDONTWRITEBYTECODE=1 "$PYTHON" -m pytest -p no:cacheprovider --basetemp="$CLUSTER_ROOT/pytest" -q "$@"
