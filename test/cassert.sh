#!/usr/bin/env bash
# An assert-enabled PostgreSQL 15 for `make test-cassert`: Debian's source package of the installed
# postgresql-15 (the same version when the archive still has it), configured with --enable-cassert
# --enable-debug --enable-tap-tests, built with make -j2 and installed into a prefix that later runs
# reuse: the server and client programs, the contrib modules the tests create (amcheck, dblink,
# postgres_fdw), and under PGXS pg_regress, pg_isolation_regress and the TAP modules
# (PostgreSQL::Test::Cluster). Prints the path of its pg_config on its last line.
#   test/cassert.sh
# The prefix is $BLOOM_CASSERT_PREFIX, default $BLOOM_CASSERT_CACHE/<version>, where
# $BLOOM_CASSERT_CACHE is /var/cache/bloomfilter-cassert as root and ~/.cache/bloomfilter-cassert
# otherwise. A complete build there is used as it is; an interrupted one is built again. The source
# comes through apt with a private list of deb-src entries (the Debian entries of this machine's apt
# sources) and private state: the machine's apt configuration is not changed. Needs the packages of
# `test/bootstrap.sh cassert`.
set -euo pipefail
cd "$(dirname "$0")/.."
PG_MAJOR=15
if [ "$(id -u)" -eq 0 ]; then
  CACHE=${BLOOM_CASSERT_CACHE:-/var/cache/bloomfilter-cassert}
else
  CACHE=${BLOOM_CASSERT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bloomfilter-cassert}
fi
CONFIGURE_OPTIONS=(--enable-cassert --enable-debug --enable-tap-tests --without-icu --without-readline)
CONTRIB=(amcheck dblink postgres_fdw)
MARK=.bloomfilter-cassert-complete

die() { echo "${0##*/}: $*" >&2; exit 1; }
# What a finished build writes into its marker: a build made otherwise is made again.
build_id() { echo "upstream source; configure ${CONFIGURE_OPTIONS[*]}; contrib ${CONTRIB[*]}"; }

installed=$(dpkg-query -W -f='${Version}' "postgresql-$PG_MAJOR" 2>/dev/null || true)
# The prefix of the installed version is known before anything is downloaded.
if [ -n "${BLOOM_CASSERT_PREFIX:-}" ]; then
  prefix=$BLOOM_CASSERT_PREFIX
elif [ -n "$installed" ]; then
  # The build of another version when the archive did not serve this one's source.
  prefix=$(cat "$CACHE/built-for-$installed" 2>/dev/null || echo "$CACHE/$installed")
else
  prefix=
fi
if [ -n "$prefix" ] && [ "$(cat "$prefix/$MARK" 2>/dev/null)" = "$(build_id)" ]; then
  echo "$prefix/bin/pg_config"
  exit 0
fi

mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
if ! flock -n 9; then
  echo "waiting for another build to finish ($CACHE/.lock)" >&2
  flock 9
fi
if [ -n "$prefix" ] && [ "$(cat "$prefix/$MARK" 2>/dev/null)" = "$(build_id)" ]; then
  echo "$prefix/bin/pg_config"
  exit 0
fi
for tool in apt-get dpkg-source gcc make bison flex perl; do
  command -v "$tool" >/dev/null || die "no $tool: run test/bootstrap.sh cassert"
done
perl -MIPC::Run -e 1 2>/dev/null || die "no IPC::Run (libipc-run-perl): run test/bootstrap.sh cassert"

began=$(date +%s)
work=$(mktemp -d "$CACHE/build.XXXXXX")
trap 'rm -rf "$work"' EXIT

# deb-src entries for the Debian entries of this machine's apt sources (one-line and deb822).
{
  cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
    awk '$1 == "deb" { $1 = "deb-src"; print }'
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk 'BEGIN { RS = ""; FS = "\n" }
      {
        types = uris = suites = components = key = ""
        for (i = 1; i <= NF; i++) {
          if ($i ~ /^[ \t]*#/ || !(n = index($i, ":"))) continue
          name = tolower(substr($i, 1, n - 1)); value = substr($i, n + 1)
          gsub(/^[ \t]+|[ \t]+$/, "", value)
          if (name == "types") types = value; else if (name == "uris") uris = value
          else if (name == "suites") suites = value; else if (name == "components") components = value
          else if (name == "signed-by" && value ~ /^\//) key = value
        }
        if (types !~ /(^| )deb( |$)/) next
        nu = split(uris, u, " "); ns = split(suites, s, " ")
        for (a = 1; a <= nu; a++) for (b = 1; b <= ns; b++)
          print "deb-src" (key != "" ? " [signed-by=" key "]" : "") " " u[a] " " s[b] " " components
      }' "$f"
  done
} | grep -E '[[:space:]]https?://[^[:space:]]+/debian(-security)?/?[[:space:]]' >"$work/sources.list" ||
  die "no Debian entry in this machine's apt sources"
mkdir -p "$work/lists/partial" "$work/apt-cache/archives/partial" "$work/source"
apt=(apt-get -q -o Dir::Etc::SourceList="$work/sources.list" -o Dir::Etc::SourceParts=/nonexistent
     -o Dir::State::Lists="$work/lists" -o Dir::Cache="$work/apt-cache" -o APT::Sandbox::User="$(id -un)")
echo "fetching the source of postgresql-$PG_MAJOR ${installed:-(not installed: the newest)}" >&2
"${apt[@]}" update >"$work/apt.log" 2>&1 || { cat "$work/apt.log" >&2; die "apt-get update of the deb-src entries failed"; }
# The installed version first, then the others the archive lists, newest first (a mirror may list a
# source it does not serve).
candidates=$("${apt[@]/#apt-get/apt-cache}" showsrc "postgresql-$PG_MAJOR" 2>/dev/null | sed -n 's/^Version: //p' |
             sort -r -V -u)
fetched=
for candidate in $installed $candidates; do
  if (cd "$work/source" && "${apt[@]}" source --download-only "postgresql-$PG_MAJOR=$candidate") >>"$work/apt.log" 2>&1; then
    fetched=$candidate
    break
  fi
  rm -f "$work/source"/*
done
[ -n "$fetched" ] || { cat "$work/apt.log" >&2; die "apt-get source postgresql-$PG_MAJOR failed"; }
[ -z "$installed" ] || [ "$fetched" = "$installed" ] ||
  echo "the archive does not serve the source of $installed; building $fetched" >&2
dsc=$(ls "$work/source"/postgresql-"$PG_MAJOR"_*.dsc)
version=$(sed -n 's/^Version: //p' "$dsc")
[ -n "$prefix" ] && [ "$version" = "$installed" ] || prefix=${BLOOM_CASSERT_PREFIX:-$CACHE/$version}
if [ "$(cat "$prefix/$MARK" 2>/dev/null)" = "$(build_id)" ]; then
  echo "$prefix/bin/pg_config"
  exit 0
fi
# Debian's patches are left out: they move the modules to /usr/lib/postgresql/<major>/lib whatever
# the prefix (the installed server's directory), and change nothing the tests exercise.
dpkg-source -x --skip-patches "$dsc" "$work/source/tree" >"$work/dpkg-source.log" 2>&1 ||
  { cat "$work/dpkg-source.log" >&2; die "dpkg-source -x failed"; }

echo "building PostgreSQL $version with ${CONFIGURE_OPTIONS[*]} into $prefix" >&2
rm -rf "$prefix"
build() {
  cd "$work/source/tree"
  ./configure --prefix="$prefix" "${CONFIGURE_OPTIONS[@]}"
  make -j2
  make install DESTDIR="$work/stage"
  for module in "${CONTRIB[@]}"; do make -j2 -C "contrib/$module" install DESTDIR="$work/stage"; done
}
if ! (build) >"$work/build.log" 2>&1; then
  tail -n 40 "$work/build.log" >&2
  cp "$work/build.log" "$CACHE/build-failed.log"
  die "the build failed; its log: $CACHE/build-failed.log"
fi
# Installed into a staging directory first: nothing may go elsewhere than the prefix (the machine's
# own server stays untouched).
outside=$(cd "$work/stage" && find . ! -type d | grep -v "^\.$prefix/" || true)
[ -z "$outside" ] || die "the install would write outside $prefix: $(echo "$outside" | head -n 5 | tr '\n' ' ')"
mkdir -p "$(dirname "$prefix")"
mv "$work/stage$prefix" "$prefix"
[ -x "$("$prefix/bin/pg_config" --pkglibdir)/pgxs/src/test/isolation/pg_isolation_regress" ] ||
  die "pg_isolation_regress was not installed"
build_id >"$prefix/$MARK"
[ -z "$installed" ] || [ -n "${BLOOM_CASSERT_PREFIX:-}" ] || echo "$prefix" >"$CACHE/built-for-$installed"
# Builds of other versions in the cache are of no more use.
if [ "$prefix" = "$CACHE/$version" ]; then
  for other in "$CACHE"/*/"$MARK"; do
    [ -f "$other" ] && [ "$(dirname "$other")" != "$prefix" ] && rm -rf "$(dirname "$other")"
  done
  for other in "$CACHE"/built-for-*; do
    [ -f "$other" ] && [ "$(cat "$other")" != "$prefix" ] && rm -f "$other"
  done
fi
s=$(($(date +%s) - began))
printf 'built PostgreSQL %s with assertions in %dm%02ds\n' "$version" $((s / 60)) $((s % 60)) >&2
echo "$prefix/bin/pg_config"
