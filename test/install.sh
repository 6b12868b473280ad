#!/usr/bin/env bash
# Installs the built extension into the server's directories: directly when they are writable,
# otherwise as root (through sudo when not root).
set -euo pipefail
cd "$(dirname "$0")/.."
. test/as_root.sh
PG_CONFIG=${PG_CONFIG:-pg_config}
if [ -w "$($PG_CONFIG --pkglibdir)" ] && [ -w "$($PG_CONFIG --sharedir)/extension" ]; then
  make -s install PG_CONFIG="$PG_CONFIG" >/dev/null
elif ! as_root make -s install PG_CONFIG="$PG_CONFIG" >/dev/null; then
  echo "cannot write $($PG_CONFIG --pkglibdir): run 'sudo make install PG_CONFIG=$PG_CONFIG' once" >&2
  exit 1
fi
