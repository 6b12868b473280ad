#!/usr/bin/env bash
# The TAP tests in t/ (PostgreSQL's own PostgreSQL::Test::Cluster), run with prove against the
# installed extension. Each test starts its own clusters; as root, they run as the postgres user
# ($BLOOM_TEST_USER), from a copy of t/ and the SQL files they read (test/multinode,
# test/examples) that this user can read.
#   test/run-tap.sh [PROVE OPTION ...] [t/NNN_name.pl ...]    default: every t/*.pl
# The servers' and the tests' logs of a failed run are kept in build/tap-log/, and of every run in
# $TAP_LOG_DIR when set.
set -euo pipefail
cd "$(dirname "$0")/.."
PG_CONFIG=${PG_CONFIG:-pg_config}
pgxs_dir=$(dirname "$($PG_CONFIG --pgxs)")/../..
[ -f "$pgxs_dir/src/test/perl/PostgreSQL/Test/Cluster.pm" ] ||
  { echo "no PostgreSQL::Test::Cluster under $pgxs_dir/src/test/perl (package postgresql-client-*): make deps" >&2; exit 1; }
perl -MIPC::Run -e 1 2>/dev/null || { echo "no IPC::Run (package libipc-run-perl): make deps" >&2; exit 1; }
options=() tests=()
for arg in "$@"; do
  case $arg in t/*.pl) tests+=("$arg") ;; *) options+=("$arg") ;; esac
done
[ ${#tests[@]} -gt 0 ] || tests=(t/*.pl)
work=$(mktemp -d "${TMPDIR:-/tmp}/bloomfilter-tap.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/test"
cp -r t "$work/"
cp -r test/multinode test/examples "$work/test/"
chmod -R a+rwX "$work"
run() {
  cd "$work" && TESTDIR="$work" PATH="$($PG_CONFIG --bindir):$PATH" \
    PG_REGRESS="$pgxs_dir/src/test/regress/pg_regress" \
    prove -I "$pgxs_dir/src/test/perl" -I "$work/t" "$@"
}
rc=0
if [ "$(id -u)" -eq 0 ]; then
  export -f run
  export work pgxs_dir PG_CONFIG
  runuser -u "${BLOOM_TEST_USER:-postgres}" -- bash -c 'run "$@"' run "${options[@]}" "${tests[@]}" || rc=$?
else
  run "${options[@]}" "${tests[@]}" || rc=$?
fi
if [ "$rc" -ne 0 ] && [ -d "$work/tmp_check/log" ]; then
  rm -rf build/tap-log && mkdir -p build && cp -r "$work/tmp_check/log" build/tap-log
  echo "logs of the servers and the tests: build/tap-log/" >&2
fi
[ -z "${TAP_LOG_DIR:-}" ] || [ ! -d "$work/tmp_check/log" ] || cp -r "$work/tmp_check/log/." "$TAP_LOG_DIR/"
exit "$rc"
