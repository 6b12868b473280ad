#!/usr/bin/env bash
# Installs the Debian packages the make targets use, when missing: with apt-get as root, through
# sudo otherwise; with neither, prints one command to paste into a root shell.
#   test/bootstrap.sh        building, testing, the demo and the benchmarks
#   test/bootstrap.sh deb    only building Debian packages (make deb): the packaging tools, and
#                            the server and headers of every PostgreSQL version whose headers are
#                            installed (the packages are built and tested for those), else of
#                            $PG_MAJOR (15, this Debian's)
#   test/bootstrap.sh cassert  also what make test-cassert needs to build PostgreSQL from its
#                            Debian source package (test/cassert.sh)
#   test/bootstrap.sh citus  also what test/citus.sh needs to build Citus (vendored, for
#                            t/015_citus.pl) against the installed server: its columnar storage's
#                            compression libraries, the GSSAPI and ICU headers that Debian's
#                            server headers include (libpq/libpq-be.h, utils/pg_locale.h;
#                            bookworm's libxml2-dev brings ICU's, trixie's no longer does), and
#                            curl's for PostgreSQL 18 (built with libcurl, and so then is Citus;
#                            without it before)
set -euo pipefail
cd "$(dirname "$0")/.."
. test/as_root.sh
PG_MAJOR=${PG_MAJOR:-15}
wanted=(
  # The server (with pgbench, amcheck and postgres_fdw), its headers and PGXS, and the client
  # (psql, pg_dump, and PostgreSQL::Test::Cluster for the TAP tests).
  make g++ "postgresql-$PG_MAJOR" "postgresql-server-dev-$PG_MAJOR" "postgresql-client-$PG_MAJOR"
  libxxhash-dev            # the core's hash
  libgtest-dev             # unit tests
  clang-14 libclang-rt-14-dev  # sanitizers and libFuzzer
  clang-format-14          # make format-check (.clang-format)
  libbenchmark-dev libssl-dev libbloom-dev  # make bench (libbloom: the peer the core is measured against)
  python3                  # META.json checks, the Python client
  bsdextrautils            # column (benchmarks)
  iproute2                 # ss: free ports (bench/cluster.sh), bytes from the nodes (t/007_multinode.pl)
  perl libipc-run-perl     # TAP tests (prove, PostgreSQL::Test::Cluster)
  sqlsmith                 # make fuzz
  python3-xxhash python3-psycopg python3-psycopg2 python3-pytest  # the Python client's tests
  python3-psycopg-pool python3-asyncpg python3-sqlalchemy python3-gunicorn  # and its adapters
  python3-django           # bloomfilter.django (tests/test_django.py)
  python3-numpy            # the Python client's contains_many accelerator (optional there, tested)
  python3-venv python3-setuptools python3-wheel  # the Python client's install in a venv (tested)
  python3-dev              # the Python client's compiled check (bloomfilter._native, tested)
  pgbouncer                # the clients' tests through PgBouncer, which start processes of their own
)
# The Node.js client's tests: Debian's nodejs and npm (and the CA certificates npm ci needs to
# reach the registry), unless a Node.js with npm is installed.
command -v node >/dev/null && command -v npm >/dev/null || wanted+=(nodejs npm ca-certificates)
if [ "${1:-}" = deb ]; then
  versions=$(dpkg-query -W -f='${Package} ${Status}\n' 'postgresql-server-dev-[0-9]*' 2>/dev/null |
             awk '/install ok installed/ { sub("postgresql-server-dev-", "", $1); print $1 }')
  wanted=(build-essential debhelper dpkg-dev postgresql-server-dev-all libxxhash-dev)
  for v in ${versions:-$PG_MAJOR}; do wanted+=("postgresql-$v" "postgresql-server-dev-$v"); done
fi
if [ "${1:-}" = cassert ]; then
  wanted+=(build-essential dpkg-dev bison flex zlib1g-dev)
fi
if [ "${1:-}" = citus ]; then
  wanted+=(build-essential liblz4-dev libzstd-dev libkrb5-dev libicu-dev)
  # Debian's PostgreSQL 18 is built with libcurl (OAuth), and so then is Citus (test/citus.sh).
  [ "$PG_MAJOR" -lt 18 ] || wanted+=(libcurl4-openssl-dev)
fi
packages=()
for p in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || packages+=("$p")
done
[ ${#packages[@]} -eq 0 ] && exit 0

command="apt-get update && apt-get install -y --no-install-recommends ${packages[*]}"
if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null; then
  echo "missing packages: ${packages[*]}" >&2
  echo "no sudo here; run this, with root's password: su -c '$command'" >&2
  exit 1
fi
echo "installing: ${packages[*]}"
rc=0
as_root apt-get update -qq && as_root env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null || rc=$?
if [ "$rc" -ne 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    echo "could not install them; run: $command" >&2
  else
    echo "could not install them; run: sudo sh -c '$command'" >&2
  fi
  exit 1
fi
