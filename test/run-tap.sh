#!/usr/bin/env bash
# The TAP tests in t/ (PostgreSQL's own PostgreSQL::Test::Cluster), run with prove against the
# installed extension. Each test starts its own clusters; as root, they run as the postgres user.
set -euo pipefail
cd "$(dirname "$0")/.."
PG_CONFIG=${PG_CONFIG:-pg_config}
pgxs_dir=$(dirname "$($PG_CONFIG --pgxs)")/../..
work=$(mktemp -d "${TMPDIR:-/tmp}/bloomfilter-tap.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp -r t "$work/"
chmod -R a+rwX "$work"
run() {
  cd "$work" && TESTDIR="$work" PATH="$($PG_CONFIG --bindir):$PATH" \
    PG_REGRESS="$pgxs_dir/src/test/regress/pg_regress" \
    prove -I "$pgxs_dir/src/test/perl" -I "$work/t" "$@" t/*.pl
}
if [ "$(id -u)" -eq 0 ]; then
  export -f run
  export work pgxs_dir PG_CONFIG
  runuser -u "${BLOOM_TEST_USER:-postgres}" -- bash -c 'run "$@"' run "$@"
else
  run "$@"
fi
