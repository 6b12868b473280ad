#!/usr/bin/env bash
# Installs the built extension into the server's directories (root, or a writable pkglibdir).
set -euo pipefail
cd "$(dirname "$0")/.."
PG_CONFIG=${PG_CONFIG:-pg_config}
if [ "$(id -u)" -eq 0 ] || [ -w "$($PG_CONFIG --pkglibdir)" ]; then
  make -s install PG_CONFIG="$PG_CONFIG" >/dev/null
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  sudo make -s install PG_CONFIG="$PG_CONFIG" >/dev/null
else
  echo "cannot write $($PG_CONFIG --pkglibdir): run 'sudo make install PG_CONFIG=$PG_CONFIG' once" >&2
  exit 1
fi
