#!/usr/bin/env bash
# Installs what building and testing need on Debian, when missing: apt-get when run as root,
# otherwise prints the command to run.
set -euo pipefail
PG_MAJOR=${PG_MAJOR:-15}
packages=()
need() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed' || packages+=("$1"); }
for p in make g++ "postgresql-$PG_MAJOR" "postgresql-server-dev-$PG_MAJOR" postgresql-client-$PG_MAJOR \
         libxxhash-dev libgtest-dev libbenchmark-dev libssl-dev clang-14 libclang-rt-14-dev \
         python3 iproute2; do
  need "$p"
done
[ ${#packages[@]} -eq 0 ] && exit 0
cmd="apt-get update && apt-get install -y --no-install-recommends ${packages[*]}"
if [ "$(id -u)" -eq 0 ]; then
  echo "installing: ${packages[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${packages[@]}"
else
  echo "missing packages: ${packages[*]}" >&2
  echo "run as root: $cmd" >&2
  exit 1
fi
