#!/usr/bin/env bash
# make deb: builds postgresql-<version>-bloomfilter for every installed PostgreSQL server version
# (postgresql-server-dev-<version>) with dpkg-buildpackage, the pg_regress suite included, and puts
# the .deb files in build/deb/. The build runs on a copy of the tree in a directory every user
# can read, as the suite's temporary cluster runs as another user and loads the files from there.
set -euo pipefail
cd "$(dirname "$0")/.."
SOURCE=$PWD
OUT=$SOURCE/build/deb
WORK=$(mktemp -d -t bloomfilter-deb.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
chmod 755 "$WORK"
mkdir -p "$WORK/src"
# The tracked files as they are in the working tree (or everything but build products outside a
# clone, as in a release archive).
if git rev-parse --git-dir >/dev/null 2>&1; then
  git ls-files -z | xargs -0 tar -cf - | tar -C "$WORK/src" -xf -
else
  tar --exclude=./build --exclude='*.o' --exclude='*.so' -cf - . | tar -C "$WORK/src" -xf -
fi
if ! (cd "$WORK/src" && dpkg-buildpackage -us -uc -b) >"$WORK/build.log" 2>&1; then
  grep -v '^20[0-9][0-9]-' "$WORK/build.log" | tail -n 60 >&2
  echo "make deb: dpkg-buildpackage failed" >&2
  exit 1
fi
rm -rf "$OUT"
mkdir -p "$OUT"
cp "$WORK"/*.deb "$WORK"/*.buildinfo "$WORK"/*.changes "$OUT"/
cp "$WORK/build.log" "$OUT"/
grep -E '^test |tests passed|tests failed' "$WORK/build.log" | sed 's/^/  /' || true
for deb in "$OUT"/*.deb; do echo "built $(basename "$deb")"; done
