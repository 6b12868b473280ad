#!/usr/bin/env bash
# Citus (distributed PostgreSQL) for t/015_citus.pl: the vendored source of Citus (../shared/vendor/
# from the project root, or $BLOOM_VENDOR_DIR), built once against the PostgreSQL of the pg_config
# on PATH (or $PG_CONFIG) and installed into that server's directories, as its `make install`
# does: citus.so and citus_columnar.so, their control files and SQL scripts, and Citus's headers.
# A node then loads it with shared_preload_libraries = citus.
#   test/citus.sh
# The version follows the server: Citus 13.2.2 for PostgreSQL 15 (14 dropped it), 14.0.1 for 16,
# 17 and 18 (13.2.2 stops at 17); BLOOM_CITUS_VERSION=13.2.2 chooses the older one on 16 or 17.
# The archive is checked against the vendor directory's SHA256SUMS; 13.2.2 is then patched with
# citus-13.2.2-pg15-minor.patch (15.x minor releases declare have_createdb_privilege() extern).
# Both are configured --without-libcurl (Citus's anonymous statistics, which it would otherwise
# be able to send from the test nodes, compiled out), unless the server was built with libcurl
# (PostgreSQL 18's OAuth): its pg_config.h then defines HAVE_LIBCURL for Citus too, whose
# statistics code then needs curl's headers and library, so --with-libcurl (the statistics stay
# off: citus.enable_statistics_collection defaults to off in a build from source, and the tests
# never turn it on). `make -j2`, then `make install DESTDIR=...` into a cache directory that later
# runs copy in (seconds). The cache is $BLOOM_CITUS_CACHE, default /var/cache/bloomfilter-citus
# as root and ~/.cache/bloomfilter-citus otherwise; a build there is made again when the archive,
# the patch, the options or the server (pg_config's path and version) change. The server's
# directories are written directly when writable, else as root (through sudo when not root).
# Needs the packages of `test/bootstrap.sh citus`.
set -euo pipefail
cd "$(dirname "$0")/.."
. test/as_root.sh
CONFIGURE_OPTIONS=(--without-libcurl)
MARK=.bloomfilter-citus-complete
PG_CONFIG=${PG_CONFIG:-pg_config}
VENDOR=${BLOOM_VENDOR_DIR:-$PWD/../shared/vendor}
if [ "$(id -u)" -eq 0 ]; then
  CACHE=${BLOOM_CITUS_CACHE:-/var/cache/bloomfilter-citus}
else
  CACHE=${BLOOM_CITUS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bloomfilter-citus}
fi

die() { echo "${0##*/}: $*" >&2; exit 1; }
elapsed() { local s=$(($(date +%s) - $1)); printf '%dm%02ds' $((s / 60)) $((s % 60)); }

pg_config_path=$(command -v "$PG_CONFIG") || die "no $PG_CONFIG on PATH: run test/bootstrap.sh citus"
pg_version=$("$PG_CONFIG" --version | awk '{ print $2 }')
pg_major=${pg_version%%.*}
pg_major=${pg_major%%[!0-9]*}   # 18devel, 19beta1
if [ "$pg_major" -ge 16 ]; then CITUS_VERSION=${BLOOM_CITUS_VERSION:-14.0.1}; else CITUS_VERSION=${BLOOM_CITUS_VERSION:-13.2.2}; fi
# The PostgreSQL versions each supports (its configure refuses others), and its patch.
case $CITUS_VERSION in
  13.2.2) supported="15 16 17" PATCH=citus-13.2.2-pg15-minor.patch ;;
  14.0.1) supported="16 17 18" PATCH= ;;
  *) die "no vendored Citus $CITUS_VERSION known (BLOOM_CITUS_VERSION: 13.2.2 or 14.0.1)" ;;
esac
[[ " $supported " == *" $pg_major "* ]] ||
  die "Citus $CITUS_VERSION supports PostgreSQL ${supported// /, }, not $pg_version ($pg_config_path)"
ARCHIVE=citus-$CITUS_VERSION.tar.gz
if grep -q '^#define HAVE_LIBCURL 1' "$("$PG_CONFIG" --includedir-server)/pg_config.h" 2>/dev/null; then
  CONFIGURE_OPTIONS=(--with-libcurl)
fi
[ -f "$VENDOR/$ARCHIVE" ] && [ -f "$VENDOR/SHA256SUMS" ] && { [ -z "$PATCH" ] || [ -f "$VENDOR/$PATCH" ]; } ||
  die "no $ARCHIVE${PATCH:+, $PATCH} and SHA256SUMS in $VENDOR (set BLOOM_VENDOR_DIR)"
VENDOR=$(cd "$VENDOR" && pwd)
archive_sum=$(awk -v f="$ARCHIVE" '$2 == f || $2 == "*" f { print $1 }' "$VENDOR/SHA256SUMS")
[ -n "$archive_sum" ] || die "$VENDOR/SHA256SUMS has no line for $ARCHIVE"

# What a finished build writes into its marker: a build made otherwise is made again. One line
# per input; the last names the server, and a new build for it removes the older ones.
build_id() {
  echo "citus $CITUS_VERSION, $ARCHIVE sha256 $archive_sum"
  [ -z "$PATCH" ] || echo "patch $PATCH sha256 $(sha256sum <"$VENDOR/$PATCH" | cut -d' ' -f1)"
  echo "configure ${CONFIGURE_OPTIONS[*]}"
  echo "server $pg_config_path $("$PG_CONFIG" --version)"
}
entry=$CACHE/$CITUS_VERSION-pg$pg_version-$(build_id | sha256sum | cut -c1-8)
complete() { [ "$(cat "$entry/$MARK" 2>/dev/null)" = "$(build_id)" ]; }

mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
if ! flock -n 9; then
  echo "waiting for another run to finish ($CACHE/.lock)" >&2
  flock 9
fi

if complete; then
  echo "Citus $CITUS_VERSION for PostgreSQL $pg_version: the build in $entry" >&2
else
  for tool in gcc make patch; do
    command -v "$tool" >/dev/null || die "no $tool: run test/bootstrap.sh citus"
  done
  [ -f "$("$PG_CONFIG" --includedir-server)/postgres.h" ] ||
    die "no server headers in $("$PG_CONFIG" --includedir-server): run test/bootstrap.sh citus"
  # Debian's server headers include gssapi/gssapi.h (libpq/libpq-be.h) and unicode/ucol.h
  # (utils/pg_locale.h), which Citus compiles.
  headers=(lz4.h zstd.h gssapi/gssapi.h unicode/ucol.h)
  [ "${CONFIGURE_OPTIONS[0]}" = --without-libcurl ] || headers+=(curl/curl.h)
  for header in "${headers[@]}"; do
    echo "#include <$header>" | gcc -E - >/dev/null 2>&1 || die "no $header: run test/bootstrap.sh citus"
  done

  began=$(date +%s)
  work=$(mktemp -d "$CACHE/build.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  # The copy is checked, then unpacked: the vendor directory may change meanwhile.
  cp "$VENDOR/$ARCHIVE" "$work/"
  echo "$archive_sum  $work/$ARCHIVE" | sha256sum -c --quiet - ||
    die "$VENDOR/$ARCHIVE does not match its checksum in $VENDOR/SHA256SUMS"
  tar -C "$work" -xzf "$work/$ARCHIVE"
  tree=$work/citus-$CITUS_VERSION
  [ -x "$tree/configure" ] || die "$ARCHIVE holds no citus-$CITUS_VERSION/configure"
  echo "building Citus $CITUS_VERSION against PostgreSQL $pg_version ($pg_config_path) into $entry" >&2
  build() {
    cd "$tree"
    [ -z "$PATCH" ] || patch -p1 --forward --batch <"$VENDOR/$PATCH"
    ./configure PG_CONFIG="$pg_config_path" "${CONFIGURE_OPTIONS[@]}"
    make -j2
    make install DESTDIR="$work/stage"
  }
  if ! (build) >"$work/build.log" 2>&1; then
    tail -n 40 "$work/build.log" >&2
    cp "$work/build.log" "$CACHE/build-failed.log"
    die "the build failed; its log: $CACHE/build-failed.log"
  fi
  # Nothing may go elsewhere than the server's directories.
  outside=$(cd "$work/stage" && find . ! -type d | sed 's|^\.||' | grep -v -e "^$("$PG_CONFIG" --pkglibdir)/" \
              -e "^$("$PG_CONFIG" --sharedir)/" -e "^$("$PG_CONFIG" --includedir-server)/" || true)
  [ -z "$outside" ] || die "the install would write outside the server's directories: $(echo "$outside" | head -n 5 | tr '\n' ' ')"
  for f in "$("$PG_CONFIG" --pkglibdir)/citus.so" "$("$PG_CONFIG" --sharedir)/extension/citus.control"; do
    [ -f "$work/stage$f" ] || die "the build installed no $f"
  done
  rm -rf "$entry"
  mkdir -p "$entry"
  mv "$work/stage" "$entry/root"
  cp "$work/build.log" "$entry/build.log"
  build_id >"$entry/$MARK"
  rm -f "$CACHE/build-failed.log"
  # Older builds of this Citus version for the same server are of no more use.
  for other in "$CACHE"/*/"$MARK"; do
    [ -f "$other" ] && [ "$(dirname "$other")" != "$entry" ] && [ "$(tail -n 1 "$other")" = "$(build_id | tail -n 1)" ] &&
      [ "$(head -n 1 "$other" | cut -d, -f1)" = "citus $CITUS_VERSION" ] && rm -rf "$(dirname "$other")"
  done
  echo "built Citus $CITUS_VERSION against PostgreSQL $pg_version in $(elapsed "$began") (log: $entry/build.log)" >&2
fi

# The install: the staged files copied over the server's, when they differ. GNU tar replaces a file
# by a new one (a running server keeps the citus.so it mapped) and leaves directories as they are.
began=$(date +%s)
mapfile -t files < <(cd "$entry/root" && find . ! -type d | sed 's|^\.||' | sort)
changed=0
for f in "${files[@]}"; do
  cmp -s "$entry/root$f" "$f" || changed=$((changed + 1))
done
if [ "$changed" -eq 0 ]; then
  echo "Citus $CITUS_VERSION is installed: the ${#files[@]} files of $entry/root are in place" >&2
else
  copy() { tar -C "$entry/root" -cf - --owner=0 --group=0 . | "$@" tar -C / -xf - --no-overwrite-dir --keep-directory-symlink; }
  if [ -w "$("$PG_CONFIG" --pkglibdir)" ] && [ -w "$("$PG_CONFIG" --sharedir)/extension" ] &&
     [ -w "$("$PG_CONFIG" --includedir-server)" ]; then
    copy
  elif ! copy as_root; then
    die "cannot write the server's directories: run it as root, or with sudo"
  fi
  for f in "${files[@]}"; do
    cmp -s "$entry/root$f" "$f" || die "$f differs from $entry/root$f after the install"
  done
  echo "installed Citus $CITUS_VERSION into PostgreSQL $pg_version ($changed of ${#files[@]} files copied) in $(elapsed "$began")" >&2
fi
echo "$("$PG_CONFIG" --sharedir)/extension/citus.control"
