#!/usr/bin/env bash
# The core and the Python client on ARM64 (aarch64), on an x86-64 machine, under QEMU user-mode
# emulation: a Debian bookworm arm64 root made once with debootstrap --arch=arm64 and kept in
# $BLOOM_ARM64_CACHE (default /var/cache/bloomfilter-arm64), the committed tree (git archive
# HEAD) copied into it, and inside it, with an empty environment but PATH, HOME and LANG:
#   1. uname -m, which must say aarch64;
#   2. the core's unit tests (make build/unit_test: the Makefile's rule, with g++; no PostgreSQL);
#   3. the Python client's compiled check (setup.py build_ext --inplace), then its path
#      (bloomfilter._native.check_path()) and bloomfilter.accelerator();
#   4. the Python client's tests that need no server, with BLOOMFILTER_NATIVE_REQUIRED=1, one
#      pytest run per file (their tests marked `server` are skipped: no PGHOST);
#   5. with --server only: PostgreSQL 15 from Debian's arm64 packages, the extension built (make
#      -j2) and installed, then test/run-python.sh (a throwaway cluster, and the tests' own) with
#      the test files that need a server, $BLOOM_ARM64_SERVER_TESTS (default tests/test_shared.py:
#      the shared copy's sequence lock and its fences, across processes).
# Run by hand, as root (debootstrap, chroot, mount), not by .ci/run: emulation makes it slow
# (the root's packages are installed and everything is compiled under emulation).
# Installs qemu-user-static and binfmt-support on this machine when aarch64 has no binfmt_misc
# handler. Exits non-zero when a step fails; prints a summary. QEMU user-mode runs the guest's
# threads on this machine's CPUs: ARM64's instructions, type sizes and signed-ness of char are
# what runs, but its weaker memory ordering is not (x86-64's holds), so a missing fence shows no
# failure here.
#   test/arm64.sh [--server] [FILE ...]  FILE: the server-less test files to run instead of the
#                                        default ones (relative to clients/python)
# BLOOM_ARM64_PYTEST_TIMEOUT: seconds allowed to each test file (default 1800).
set -euo pipefail
cd "$(dirname "$0")/.."
SOURCE=$PWD
CACHE=${BLOOM_ARM64_CACHE:-/var/cache/bloomfilter-arm64}
ROOT=$CACHE/bookworm-arm64
PYTEST_TIMEOUT=${BLOOM_ARM64_PYTEST_TIMEOUT:-1800}
# The Python client's test files that need no server (the tests in them that do are skipped).
TEST_FILES=(tests/test_native.py tests/test_follow_fast.py tests/test_check.py tests/test_golden.py
            tests/test_contains_many.py tests/test_contains_many_layered.py tests/test_filter_object.py
            tests/test_versions.py tests/test_packaging.py)
SERVER=0
if [ "${1:-}" = --server ]; then SERVER=1; shift; fi
[ $# -eq 0 ] || TEST_FILES=("$@")
read -r -a SERVER_TESTS <<<"${BLOOM_ARM64_SERVER_TESTS:-tests/test_shared.py}"
# What the steps need inside the root; the test files import psycopg (test_contains_many, and the
# follower's module) even where their tests that use it are skipped.
# test_packaging installs the client in a venv (python3-venv, python3-wheel).
PACKAGES=(g++ make libxxhash-dev libgtest-dev python3-dev python3-setuptools python3-xxhash
          python3-pytest python3-numpy python3-psycopg python3-psycopg-pool python3-venv python3-wheel)
# With --server: what test/run-python.sh asks for (test/bootstrap.sh's list for the Python client),
# and the server.
[ "$SERVER" -eq 0 ] ||
  PACKAGES+=(postgresql-15 postgresql-server-dev-15 postgresql-client-15 iproute2 python3-psycopg2
             python3-asyncpg python3-sqlalchemy python3-gunicorn python3-django pgbouncer)
# shellcheck source=chroot.sh
. test/chroot.sh
[ "$(id -u)" -eq 0 ] || chroot_die "needs root (debootstrap, chroot and mount)"
STARTED_AT=$(date +%s)
elapsed() { local s=$(($(date +%s) - $1)); printf '%dm%02ds' $((s / 60)) $((s % 60)); }

# The emulator: qemu-user-static's aarch64 handler, registered with binfmt_misc with the F flag
# (the interpreter opened when registered, so that it runs inside a chroot too).
HANDLER=/proc/sys/fs/binfmt_misc/qemu-aarch64
if [ ! -e "$HANDLER" ]; then
  if [ ! -x /usr/bin/qemu-aarch64-static ] || ! command -v update-binfmts >/dev/null; then
    echo "installing qemu-user-static and binfmt-support"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-user-static binfmt-support >/dev/null
  fi
  # A container or a machine without systemd may not have binfmt_misc mounted.
  [ -e /proc/sys/fs/binfmt_misc/register ] ||
    mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc ||
    chroot_die "cannot mount binfmt_misc on /proc/sys/fs/binfmt_misc"
  update-binfmts --enable qemu-aarch64 || true
fi
[ -e "$HANDLER" ] && [ "$(head -n 1 "$HANDLER")" = enabled ] ||
  chroot_die "no enabled aarch64 handler in binfmt_misc ($HANDLER): install qemu-user-static and binfmt-support"

mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
if ! flock -n 9; then
  echo "arm64: waiting for another run to finish ($CACHE/.lock)"
  flock 9
fi
TREE=/srv/bloomfilter
cleanup() {
  local rc=$?
  set +e
  trap - EXIT INT TERM
  chroot_cleanup
  if chroot_nothing_mounted_below "$ROOT"; then rm -rf "${ROOT:?}$TREE"; else echo "arm64: still mounted below $ROOT" >&2; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'echo "arm64: interrupted" >&2; exit 130' INT
trap 'echo "arm64: terminated" >&2; exit 143' TERM

declare -a SUMMARY=()
FAILED=0
record() { # name rc began [detail]
  SUMMARY+=("$(printf '%-46s %-7s %7s  %s' "$1" "$([ "$2" -eq 0 ] && echo passed || echo FAILED)" "$(elapsed "$3")" "${4:-}")")
  [ "$2" -eq 0 ] || FAILED=1
}
summary() {
  echo
  echo "== summary (aarch64 under QEMU user-mode emulation, root $ROOT)"
  printf '%s\n' "${SUMMARY[@]}"
  echo "total time: $(elapsed "$STARTED_AT") (each step's output: $LOG_DIR)"
}

# in_root SCRIPT: runs the shell script as root inside the root, with an empty environment but
# PATH, HOME and LANG, in the tree.
in_root() {
  chroot "$ROOT" /usr/bin/env -i HOME=/root LANG=C.UTF-8 \
    PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin \
    /bin/bash -c "cd $TREE && $1"
}
# step NAME SCRIPT: one timed step, its output shown and kept in $CACHE/last-run/NAME.log; in the
# background and waited for, so that a signal stops the run at once.
LOG_DIR=$CACHE/last-run
rm -rf "$LOG_DIR"
mkdir -p "$LOG_DIR"
step() {
  local name=$1 began rc=0
  began=$(date +%s)
  echo "== $name"
  { in_root "$2" 2>&1 | tee "$LOG_DIR/${name//[^A-Za-z0-9_.-]/_}.log"; } &
  wait $! || rc=$?
  echo "== $name: $([ "$rc" -eq 0 ] && echo passed || echo "FAILED (exit $rc)") after $(elapsed "$began")"
  LAST_LOG=$LOG_DIR/${name//[^A-Za-z0-9_.-]/_}.log
  record "$name" "$rc" "$began" "${3:-}"
  return "$rc"
}

began=$(date +%s)
chroot_make_root --arch=arm64 bookworm "$ROOT" "$CACHE/bookworm-arm64.log"
record "arm64 root (made once)" 0 "$began" "$ROOT"

chroot_mount_system "$ROOT"
# The certificate authorities this machine's administrator added, as .ci/run does.
if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
  mkdir -p "$ROOT/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$ROOT/usr/local/share/ca-certificates/"
fi

# The packages, installed once (apt-get only when one is missing).
began=$(date +%s)
rc=0
missing=$(chroot "$ROOT" dpkg-query -W -f '${db:Status-Abbrev} ${Package}\n' "${PACKAGES[@]}" 2>&1 |
          grep -v '^ii ' || true)
if [ -z "$missing" ]; then
  echo "== packages: all installed"
else
  echo "== packages: installing ${PACKAGES[*]} (under emulation: slow)"
  # No service started by a package's installation (postgresql's cluster, pgbouncer) in the root.
  [ -e "$ROOT/usr/sbin/policy-rc.d" ] || printf '#!/bin/sh\nexit 101\n' >"$ROOT/usr/sbin/policy-rc.d"
  chmod 755 "$ROOT/usr/sbin/policy-rc.d"
  chroot "$ROOT" /usr/bin/env -i HOME=/root PATH=/usr/bin:/bin:/usr/sbin:/sbin DEBIAN_FRONTEND=noninteractive \
    /bin/bash -c "apt-get update -qq && apt-get install -y -qq --no-install-recommends ${PACKAGES[*]} >/dev/null" || rc=$?
fi
record "packages in the root" "$rc" "$began"
[ "$rc" -eq 0 ] || { summary; exit 1; }

# The committed tree (what HEAD holds, as .ci/run tests), fresh for each run.
rm -rf "${ROOT:?}$TREE"
mkdir -p "$ROOT$TREE"
git -C "$SOURCE" archive HEAD | tar -x -C "$ROOT$TREE"
echo "== tree: $(git -C "$SOURCE" rev-parse --short HEAD) ($(git -C "$SOURCE" log -1 --format=%s))"
git -C "$SOURCE" diff --quiet HEAD || echo "arm64: uncommitted changes are not in the tree tested" >&2

rc=0
step "uname -m is aarch64" 'm=$(uname -m); echo "uname -m: $m"; [ "$m" = aarch64 ]' || rc=$?
SUMMARY[-1]+="$(sed -n 's/^uname -m: /uname -m = /p' "$LAST_LOG")"
[ "$rc" -eq 0 ] || { summary; exit 1; }

if step "core unit tests (g++, make build/unit_test)" \
     'make -s CXX=g++ build/unit_test && build/unit_test'; then
  SUMMARY[-1]+="$(grep -E '^\[ +(PASSED|SKIPPED|FAILED) +\] [0-9]+ tests?' "$LAST_LOG" |
                   sed -E 's/^\[ *([A-Z]+) *\] ([0-9]+) tests?.*/\2 \1/' | tr 'A-Z\n' 'a-z,' | sed 's/,$//; s/,/, /g')"
else
  SUMMARY[-1]+="$(grep -E '^\[ +(PASSED|FAILED) +\] [0-9]+ tests?' "$LAST_LOG" | tr '\n' ' ')"
fi

NATIVE=0
if step "Python compiled check (setup.py build_ext)" \
     'cd clients/python && { python3 setup.py -q build_ext --inplace 2>&1 | grep -v BetaConfiguration || true; }
      python3 -c "
import platform, bloomfilter, bloomfilter._native as n
print(\"machine:\", platform.machine())
print(\"check_path:\", n.check_path())
print(\"accelerator:\", bloomfilter.accelerator())
n.fence()
print(\"fence: called\")"'; then
  NATIVE=1
  SUMMARY[-1]+="$(sed -n 's/^check_path: /check_path() = /p' "$LAST_LOG")"
fi

if [ "$NATIVE" -eq 1 ]; then
  for file in "${TEST_FILES[@]}"; do
    step "pytest ${file#tests/}" \
      "cd clients/python && PYTHONDONTWRITEBYTECODE=1 BLOOMFILTER_NATIVE_REQUIRED=1 \
       timeout -s INT $PYTEST_TIMEOUT python3 -m pytest -p no:cacheprovider --basetemp=$TREE/build/pytest \
       -q -rfEs $file" || true
    SUMMARY[-1]+="$(grep -E '^(=+ )?[0-9]+ (passed|failed|error|skipped)|(passed|failed|skipped|error)[^ ]* in [0-9.]+s' "$LAST_LOG" | tail -n 1 | sed 's/^=* *//; s/ *=*$//')"
  done
else
  record "Python tests" 1 "$(date +%s)" "not run: no compiled check"
fi

if [ "$SERVER" -eq 1 ]; then
  if step "extension built (make -j2) and installed" \
       'make -s -j2 PG_CONFIG=/usr/bin/pg_config && test/install.sh' "$(in_root 'pg_config --version')"; then
    step "test/run-python.sh ${SERVER_TESTS[*]#tests/}" \
      "timeout -s INT $PYTEST_TIMEOUT test/run-python.sh -rfEs ${SERVER_TESTS[*]}" || true
    SUMMARY[-1]+="$(grep -E '^(=+ )?[0-9]+ (passed|failed|error|skipped)|(passed|failed|skipped|error)[^ ]* in [0-9.]+s' "$LAST_LOG" | tail -n 1 | sed 's/^=* *//; s/ *=*$//')"
  fi
fi

summary
[ "$FAILED" -eq 0 ]
