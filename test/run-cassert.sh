#!/usr/bin/env bash
# make test-cassert: the extension's tests on an assert-enabled PostgreSQL 15 (test/cassert.sh,
# built once and kept in a cache directory): the pg_regress suite, fresh and upgraded from 1.0, and
# the isolation specs (test/run-regress.sh), then the TAP tests (test/run-tap.sh). Fails when a
# test fails, and when a server's log shows a failed assertion (TRAP:), a backend that crashed, or
# a warning PostgreSQL gives only for a bug (a leaked reference, memory written past a chunk's
# end); those lines are printed with what follows them (the backtrace of a failed assertion).
#   test/run-cassert.sh [t/NNN_name.pl ...]    default: every TAP test
# Installs the packages of `test/bootstrap.sh cassert` first. The extension is built in a copy of
# the tree, build/cassert/tree (objects of the normal build, in src/, would be taken by a VPATH
# build when newer than their sources); the servers' logs are kept in build/cassert/logs/.
set -euo pipefail
cd "$(dirname "$0")/.."
# Not the variables of `make test-cassert TAP_TESTS=...`: PGXS's installcheck (test/run-regress.sh)
# would run its own prove on them.
unset MAKEFLAGS MFLAGS MAKELEVEL
SOURCE=$PWD
test/bootstrap.sh cassert
PG_CONFIG=$(test/cassert.sh | tail -n 1)
export PG_CONFIG
echo "== PostgreSQL with assertions: $("$PG_CONFIG" --version), $PG_CONFIG"

out=$SOURCE/build/cassert
tree=$out/tree
logs=$out/logs
rm -rf "$tree" "$logs"
mkdir -p "$tree" "$logs/regress" "$logs/tap"
tar -C "$SOURCE" --exclude=./build --exclude=./.git --exclude='*.o' --exclude='*.so' --exclude='*.bc' -cf - . |
  tar -C "$tree" -xf -
# The servers run as postgres when this runs as root: they read the logs' directory too.
chmod -R a+rwX "$logs"
cd "$tree"
echo "== build and install against it"
make -s -j2 PG_CONFIG="$PG_CONFIG" >"$out/build.log" 2>&1 || { cat "$out/build.log"; exit 1; }
grep -i 'warning' "$out/build.log" || true
test/install.sh

declare -a results=()
rc=0
run() { # NAME COMMAND...
  local name=$1 status=0
  shift
  echo "== $name"
  "$@" || status=$?
  results+=("$(printf '%-26s %s' "$name" "$([ "$status" -eq 0 ] && echo passed || echo "FAILED (exit $status)")")")
  [ "$status" -eq 0 ] || rc=1
}
# test/run-regress.sh runs the isolation specs (ISOLATION) after REGRESS, in PGXS's installcheck.
run "pg_regress, isolation" env CLUSTER_LOG_DIR="$logs/regress" test/run-regress.sh
tap=()
for arg in "$@"; do tap+=("$arg"); done
run "TAP" env TAP_LOG_DIR="$logs/tap" test/run-tap.sh "${tap[@]}"

# What the servers logged, every cluster's log (and any log a runner left in the tree).
echo "== the servers' logs"
mapfile -t files < <(find "$logs" "$tree/build" -path "$tree/build/tap-log" -prune -o -type f \
                       \( -name '*.log' -o -name 'regress_log_*' \) -print 2>/dev/null | sort)
echo "${#files[@]} log files"
bad='TRAP:|terminated by signal ([^9]|[0-9][0-9])|was terminated by exception|WARNING:.*(problem in |leak|not closed|write past)'
found=0
for f in "${files[@]}"; do
  if grep -qE "$bad" "$f"; then
    found=1
    echo "-- ${f#"$out"/}"
    grep -nE -A 30 "$bad" "$f" | head -n 200
  fi
done
if [ "$found" -eq 1 ]; then
  results+=("$(printf '%-26s %s' "servers' logs" "FAILED: failed assertion, crash or leak above")")
  rc=1
else
  results+=("$(printf '%-26s %s' "servers' logs" "no TRAP:, no crash, no leak warning")")
fi
# The other warnings, for the record (tests provoke some on purpose).
if [ ${#files[@]} -gt 0 ]; then
  warnings=$(cat "${files[@]}" | sed -n 's/^.*\(WARNING: .*\)$/\1/p' | sed 's/[0-9][0-9]*/N/g' | sort | uniq -c | sort -rn)
  [ -z "$warnings" ] || { echo "-- other warnings in the servers' logs (count, numbers as N):"; echo "$warnings" | head -n 40; }
fi

echo
echo "== make test-cassert ($("$PG_CONFIG" --version), assertions on)"
printf '%s\n' "${results[@]}"
[ "$rc" -eq 0 ] && echo "make test-cassert: passed" || echo "make test-cassert: FAILED"
exit "$rc"
