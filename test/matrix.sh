#!/usr/bin/env bash
# Builds Debian packages of the extension and runs the whole pg_regress suite against several
# PostgreSQL versions, then checks that filters move between them byte for byte.
#   test/matrix.sh [VERSION ...]      default: 15 17 18; run as root
#   BLOOM_MATRIX_KEEP=DIR test/matrix.sh   also keep the logs, dumps and fingerprints in DIR
#   BLOOM_MATRIX_CITUS="17 18"             the versions that also run the Citus TAP tests (the
#                                          default; "" none); 15's are `make test-citus`'s
#
# Each version runs in a minimal Debian root with that version's packages: 15 in bookworm, 17 in
# trixie, 18 in sid, each made once with debootstrap into $BLOOM_MATRIX_CACHE (default
# /var/cache/bloomfilter-matrix) and reused (missing packages are added). For each version: copy
# this tree in, build it with that version's pg_config and -Werror (PG_CXXFLAGS_EXTRA),
# build the package postgresql-VERSION-bloomfilter with `make deb` (dpkg-buildpackage, its own
# run of the suite included), install the .deb with apt-get, start a throwaway cluster as the
# postgres user (Unix socket only, no TCP port) and run `make installcheck` against the installed
# package.
# Then the byte format check: every version builds the same filters from the same SQL, dumps them
# (pg_dump, binary COPY, text COPY), and every other version loads them and must see the same
# bytes (md5 of f::bytea and f::text), the same bloom_info and the same bloom_contains answers.
# pg_dump goes from older to newer versions only (its supported direction); COPY both ways.
# Then, for the versions of $BLOOM_MATRIX_CITUS that run: the vendored Citus (../shared/vendor/, or
# $BLOOM_VENDOR_DIR; 14.0.1 for 16 and later) built by test/citus.sh inside the root, once, into the
# root's /var/cache/bloomfilter-citus (kept with the root), and the TAP tests of `make test-citus`
# (t/015_citus.pl, ...; test/run-tap.sh, as the postgres user) against the installed package, with
# the packages they need added to the root.
# Every mount and every server started is undone on exit, whatever the outcome.
set -euo pipefail
cd "$(dirname "$0")/.."
SOURCE=$PWD
CACHE=${BLOOM_MATRIX_CACHE:-/var/cache/bloomfilter-matrix}
if [ $# -gt 0 ]; then VERSIONS=("$@"); else VERSIONS=(15 17 18); fi
read -r -a CITUS_VERSIONS <<<"${BLOOM_MATRIX_CITUS-17 18}"
VENDOR=${BLOOM_VENDOR_DIR:-$SOURCE/../shared/vendor}
STARTED_AT=$(date +%s)
# shellcheck source=chroot.sh
. test/chroot.sh

die() { echo "matrix: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot and mount); run: sudo make test-matrix"

# The Debian suite whose packages provide a version.
suite_of() {
  case $1 in
    15) echo bookworm ;;
    17) echo trixie ;;
    18) echo sid ;;
    *) die "no Debian suite known for PostgreSQL $1 (known: 15 17 18)" ;;
  esac
}
root_of() { echo "$CACHE/$(suite_of "$1")-postgresql-$1"; }
where_of() { echo "Debian $(suite_of "$1") root"; }
pg_config_of() { echo "/usr/lib/postgresql/$1/bin/pg_config"; }
port_of() { echo $((54000 + $1)); }

for v in "${VERSIONS[@]}"; do suite_of "$v" >/dev/null; done

mkdir -p "$CACHE"
# One run at a time: the roots and their mount points are shared.
exec 9>"$CACHE/.lock"
if ! flock -n 9; then
  echo "matrix: waiting for another run to finish ($CACHE/.lock)"
  flock 9
fi

WORK=$(mktemp -d /tmp/bloomfilter-matrix.XXXXXX)
chmod 755 "$WORK"
EXCHANGE=$WORK/exchange   # dumps and fingerprints, seen at the same path by every version
LOGS=$WORK/logs
mkdir -p "$EXCHANGE" "$LOGS"
STARTED=()    # versions whose cluster may be running
ROOTS=()      # roots this run used

stop_cluster() {
  local v=$1 root pid_file pid
  root=$(root_of "$v")
  pid_file=$root$WORK/cluster-$v/data/postmaster.pid
  [ -f "$pid_file" ] || return 0
  as_postgres "$v" pg_ctl -D "$WORK/cluster-$v/data" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
  if [ -f "$pid_file" ]; then
    pid=$(head -n 1 "$pid_file")
    [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null || true
  fi
}

# The build and the suite run in the background, in a process group of their own (job control
# on while it starts), and are waited for, so that a signal stops the run at once (bash runs a
# trap only when the foreground command has ended) and the cleanup stops the whole group.
LONG_PID=
long() {
  set -m
  "$@" &
  LONG_PID=$!
  set +m
  local rc=0
  wait "$LONG_PID" || rc=$?
  LONG_PID=
  return "$rc"
}

cleanup() {
  local rc=$? i v root pid left
  set +e
  trap - EXIT INT TERM
  [ -n "$LONG_PID" ] && kill -TERM -- "-$LONG_PID" 2>/dev/null
  for v in "${STARTED[@]}"; do stop_cluster "$v"; done
  # Anything still running inside a root this run used was started by this run (the lock).
  chroot_cleanup
  for root in "${ROOTS[@]}"; do
    left=$(awk -v p="$root$WORK" 'index($2, p) == 1' /proc/self/mounts)
    if [ -z "$left" ]; then rm -rf "${root:?}$WORK"; else echo "matrix: still mounted: $left" >&2; fi
  done
  left=$(awk -v p="$WORK" 'index($2, p) == 1' /proc/self/mounts)
  if [ -n "${BLOOM_MATRIX_KEEP:-}" ]; then
    mkdir -p "$BLOOM_MATRIX_KEEP" && cp -r "$LOGS" "$EXCHANGE" "$BLOOM_MATRIX_KEEP"/
  fi
  [ -z "$left" ] && rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'echo "matrix: interrupted" >&2; exit 130' INT
trap 'echo "matrix: terminated" >&2; exit 143' TERM

# Runs a command inside a version's root, as root or as postgres, with a clean environment that
# points the client tools at that version's cluster (no locale: initdb is given its own).
env_of() {
  echo "PATH=/usr/lib/postgresql/$1/bin:/usr/sbin:/usr/bin:/sbin:/bin" HOME=/tmp \
       "PGHOST=$WORK/cluster-$1" "PGPORT=$(port_of "$1")" PGUSER=postgres PGDATABASE=postgres
}
in_env() {
  local v=$1; shift
  # shellcheck disable=SC2046
  chroot "$(root_of "$v")" /usr/bin/env -i $(env_of "$v") "$@"
}
as_postgres() {
  local v=$1; shift
  # shellcheck disable=SC2046
  chroot --userspec=postgres:postgres "$(root_of "$v")" /usr/bin/env -i $(env_of "$v") "$@"
}

# What building, packaging and testing need inside a version's root.
packages_of() {
  echo "postgresql-$1 postgresql-server-dev-$1 libxxhash-dev make g++ build-essential debhelper"
  echo "postgresql-server-dev-all dpkg-dev"
}

# And what building Citus (test/bootstrap.sh citus: its compression libraries, the GSSAPI and ICU
# headers the server's headers include, curl's where the server uses libcurl) and the TAP tests
# (PostgreSQL::Test::Cluster is in the client's package; the Python client's CitusIndexFollower
# tests in t/015 need pytest, psycopg 3 and xxhash; the Node client's, which need `npm ci`, are
# skipped) need.
citus_packages_of() {
  echo "postgresql-client-$1 liblz4-dev libzstd-dev libkrb5-dev libicu-dev perl libipc-run-perl"
  echo "python3-pytest python3-psycopg python3-xxhash"
  [ "$1" -lt 18 ] || echo libcurl4-openssl-dev
}

# A version's root, made with debootstrap when the cache does not have it yet; packages missing
# from an older root are added (and those of Citus when a second argument says so).
ensure_root() {
  local v=$1 suite root missing=() p
  suite=$(suite_of "$v")
  root=$(root_of "$v")
  # shellcheck disable=SC2046
  chroot_make_root "$suite" "$root" "$CACHE/$suite.log" $(packages_of "$v")
  for p in $(packages_of "$v") ${2:+$(citus_packages_of "$v")}; do
    chroot "$root" dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "matrix: installing ${missing[*]} in the Debian $suite root"
  # sid's Release file is valid for a week only: a mirror that is a snapshot refuses it after
  # that (debootstrap does not look).
  chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
    sh -c "apt-get -o Acquire::Check-Valid-Until=false update -qq &&
           apt-get install -y -qq --no-install-recommends ${missing[*]}" >/dev/null
}

# Whether a version runs the Citus TAP tests here.
with_citus() { [[ " ${CITUS_VERSIONS[*]} " == *" $1 "* ]] && [ -d "$VENDOR" ]; }

# Makes a version's environment ready: the root, its mounts, the exchange directory (and the
# vendored sources, read-only, for Citus).
prepare() {
  local v=$1 root
  root=$(root_of "$v")
  ROOTS+=("$root")
  ensure_root "$v" "$(with_citus "$v" && echo citus)"
  chroot_mount_system "$root"
  mkdir -p "$root$WORK"
  chmod 755 "$root$WORK"
  chroot_mount bind "$EXCHANGE" "$root$EXCHANGE"
  if with_citus "$v"; then
    chroot_mount bind "$VENDOR" "$root$WORK/vendor"
    mount -o remount,bind,ro "$root$WORK/vendor" || die "cannot make $root$WORK/vendor read-only"
  fi
}

# Copies this tree (without build products) into the version's root and builds and installs it.
# Sets BUILD_RESULT.
build() {
  local v=$1 root src log debs
  root=$(root_of "$v")
  src=$WORK/src-$v
  log=$LOGS/build-$v.log
  mkdir -p "$root$src"
  tar -C "$SOURCE" --exclude=./.git --exclude=./build --exclude=./results --exclude='*.o' \
      --exclude='*.so' --exclude='*.bc' -cf - . | tar -C "$root$src" -xf - || die "cannot copy the tree"
  # Any compiler warning fails the build.
  if ! long in_env "$v" make -C "$src" PG_CONFIG="$(pg_config_of "$v")" PG_CXXFLAGS_EXTRA=-Werror >"$log" 2>&1; then
    tail -n 40 "$log"
    BUILD_RESULT="FAILED"
    return 1
  fi
  # The package, built (and its suite run) by dpkg-buildpackage, then installed.
  if ! long in_env "$v" make -C "$src" deb >>"$log" 2>&1; then
    tail -n 40 "$log"
    BUILD_RESULT="FAILED: package"
    return 1
  fi
  debs=("$root$src/build/deb/postgresql-$v-bloomfilter_"*.deb)
  if ! in_env "$v" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --reinstall \
         "${debs[0]#"$root"}" >>"$log" 2>&1; then
    tail -n 20 "$log"
    BUILD_RESULT="FAILED: package install"
    return 1
  fi
  BUILD_RESULT="ok (-Werror), .deb"
}

start_cluster() {
  local v=$1 root dir
  root=$(root_of "$v")
  dir=$WORK/cluster-$v
  mkdir -p "$root$dir"
  in_env "$v" chown postgres:postgres "$dir" || return 1
  if ! as_postgres "$v" initdb -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 \
         --no-sync >"$LOGS/initdb-$v.log" 2>&1; then
    cat "$LOGS/initdb-$v.log"
    return 1
  fi
  cat >>"$root$dir/data/postgresql.conf" <<EOF
port = $(port_of "$v")
listen_addresses = ''
unix_socket_directories = '$dir'
fsync = off
max_connections = 50
shared_buffers = 256MB
max_parallel_workers_per_gather = 2
max_worker_processes = 8
EOF
  STARTED+=("$v")
  if ! as_postgres "$v" pg_ctl -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null; then
    cat "$root$dir/server.log"
    return 1
  fi
}

# `make installcheck` on the version's cluster. Sets SUITE_RESULT. The pg_regress suite only
# (ISOLATION emptied): the isolation specs' expected output is checked on PostgreSQL 15.
run_suite() {
  local v=$1 root src log passed failed total
  root=$(root_of "$v")
  src=$WORK/src-$v
  log=$LOGS/suite-$v.log
  mkdir -p "$root$src/build/regress"
  total=$(make -s --no-print-directory -C "$SOURCE" regress-list | wc -w)
  if long in_env "$v" make -C "$src" -s installcheck ISOLATION= PG_CONFIG="$(pg_config_of "$v")" >"$log" 2>&1; then
    passed=$(sed -nE 's/.*All ([0-9]+) tests passed.*/\1/p' "$log")
    SUITE_RESULT="${passed:-?} of $total tests passed"
    [ "${passed:-0}" -eq "$total" ]
    return
  fi
  failed=$(sed -nE 's/.* ([0-9]+) of [0-9]+ tests failed.*/\1/p' "$log")
  grep -E '^(test |ok |not ok |# )' "$log" || tail -n 20 "$log"
  [ -f "$root$src/build/regress/regression.diffs" ] && head -n 200 "$root$src/build/regress/regression.diffs"
  if [ -n "$failed" ]; then
    SUITE_RESULT="$((total - failed)) of $total tests passed, $failed FAILED"
  else
    SUITE_RESULT="FAILED (see above)"
  fi
  return 1
}

# Citus built (or found in the root's cache) and installed into the version's server, then
# the Citus TAP tests of `make test-citus` (CITUS_TAP_TESTS) against the installed package. Sets
# CITUS_RESULT.
run_citus() {
  local v=$1 root src log began
  root=$(root_of "$v")
  src=$WORK/src-$v
  log=$LOGS/citus-$v.log
  began=$(date +%s)
  if ! long in_env "$v" env BLOOM_VENDOR_DIR="$WORK/vendor" PG_CONFIG="$(pg_config_of "$v")" \
         "$src/test/citus.sh" >"$log" 2>&1; then
    tail -n 40 "$log"
    CITUS_RESULT="FAILED: Citus build"
    return 1
  fi
  CITUS_BUILT=$(sed -nE 's/^(built|installed) Citus ([0-9.]+) .* in ([0-9]+m[0-9]+s).*/\1 \2 in \3/p; s/^Citus ([0-9.]+) for .*: the build in .*/cached \1/p' "$log" | head -n 1)
  echo "   Citus: ${CITUS_BUILT:-?} ($(($(date +%s) - began)) s)"
  # shellcheck disable=SC2046
  if long in_env "$v" env PG_CONFIG="$(pg_config_of "$v")" TAP_LOG_DIR= "$src/test/run-tap.sh" \
       $(make -s --no-print-directory -C "$SOURCE" citus-tap-list) >>"$log" 2>&1; then
    CITUS_RESULT=$(sed -nE 's/^Files=([0-9]+), Tests=([0-9]+),.*/\1 files, \2 tests passed/p' "$log")
    return 0
  fi
  grep -E '^(t/|not ok|#   Failed|# Looks like)' "$log" | head -n 40 || tail -n 40 "$log"
  CITUS_RESULT="FAILED ($(grep -c '^not ok' "$log") not ok)"
  return 1
}

# ---- Byte format check -------------------------------------------------------------------------

# Tables, key generators and probes; the same on every version and in every restored database.
FIXTURE_SCHEMA=$(cat <<'SQL'
CREATE EXTENSION bloomfilter;
CREATE FUNCTION fixture_text(i int) RETURNS text LANGUAGE sql IMMUTABLE
  AS $$ SELECT 'user' || i || '@example.com' $$;
CREATE FUNCTION fixture_utf8(i int) RETURNS text LANGUAGE sql IMMUTABLE
  AS $$ SELECT 'ключ-' || i || '-naïve' $$;
CREATE FUNCTION fixture_bytea(i int) RETURNS bytea LANGUAGE sql IMMUTABLE
  AS $$ SELECT decode(md5(i::text), 'hex') $$;
CREATE FUNCTION fixture_int8(i int) RETURNS bigint LANGUAGE sql IMMUTABLE
  AS $$ SELECT i::bigint * 2654435761 - 5000000000 $$;
CREATE FUNCTION fixture_uuid(i int) RETURNS uuid LANGUAGE sql IMMUTABLE
  AS $$ SELECT md5('uuid' || i)::uuid $$;
CREATE FUNCTION fixture_contains(f bloom, key_type text, i int) RETURNS boolean LANGUAGE sql IMMUTABLE
  AS $$ SELECT CASE key_type WHEN 'text' THEN bloom_contains(f, fixture_text(i))
                             WHEN 'utf8' THEN bloom_contains(f, fixture_utf8(i))
                             WHEN 'bytea' THEN bloom_contains(f, fixture_bytea(i))
                             WHEN 'int8' THEN bloom_contains(f, fixture_int8(i))
                             WHEN 'uuid' THEN bloom_contains(f, fixture_uuid(i)) END $$;
CREATE FUNCTION fixture_contains_array(f bloom, key_type text, first int, last int)
  RETURNS boolean[] LANGUAGE sql IMMUTABLE
  AS $$ SELECT CASE key_type
    WHEN 'text' THEN bloom_contains(f, ARRAY(SELECT fixture_text(i) FROM generate_series(first, last) i))
    WHEN 'utf8' THEN bloom_contains(f, ARRAY(SELECT fixture_utf8(i) FROM generate_series(first, last) i))
    WHEN 'bytea' THEN bloom_contains(f, ARRAY(SELECT fixture_bytea(i) FROM generate_series(first, last) i))
    WHEN 'int8' THEN bloom_contains(f, ARRAY(SELECT fixture_int8(i) FROM generate_series(first, last) i))
    WHEN 'uuid' THEN bloom_contains(f, ARRAY(SELECT fixture_uuid(i) FROM generate_series(first, last) i))
    END $$;
-- members: keys 1 .. members of key_type were added.
CREATE TABLE fixture_filters (name text PRIMARY KEY, key_type text NOT NULL, members int NOT NULL, f bloom);
-- The same, compressed in TOAST (read whole, not in slices).
CREATE TABLE fixture_compressed (name text PRIMARY KEY, key_type text NOT NULL, members int NOT NULL, f bloom);
ALTER TABLE fixture_compressed ALTER COLUMN f SET STORAGE extended;
SQL
)

# Every way of building a filter, every key type, inline, out of line and compressed values.
FIXTURE_DATA=$(cat <<'SQL'
INSERT INTO fixture_filters VALUES
  ('empty', 'text', 0, bloom_empty(100, 0.01)),
  ('tiny_text', 'text', 3,
   bloom_add(bloom_empty(10, 0.01), ARRAY[fixture_text(1), NULL, fixture_text(2), fixture_text(3)]));
INSERT INTO fixture_filters
  SELECT 'auto_text', 'text', 5000, bloom_agg(fixture_text(i)) FROM generate_series(1, 5000) i;
INSERT INTO fixture_filters
  SELECT 'auto_utf8_p0.001', 'utf8', 4000, bloom_agg(fixture_utf8(i), 0.001) FROM generate_series(1, 4000) i;
INSERT INTO fixture_filters
  SELECT 'sized_bytea', 'bytea', 30000, bloom_agg(fixture_bytea(i), 60000, 0.01) FROM generate_series(1, 30000) i;
INSERT INTO fixture_filters
  SELECT 'sized_int8_p0.05', 'int8', 20000, bloom_agg(fixture_int8(i), 20000, 0.05) FROM generate_series(1, 20000) i;
INSERT INTO fixture_filters
  SELECT 'array_uuid', 'uuid', 1000, bloom_add(bloom_empty(1000, 0.02), array_agg(fixture_uuid(i)))
  FROM generate_series(1, 1000) i;
INSERT INTO fixture_filters
  SELECT 'union_text', 'text', 2000,
         bloom_union((SELECT bloom_agg(fixture_text(i), 2000, 0.01) FROM generate_series(1, 1000) i),
                     (SELECT bloom_agg(fixture_text(i), 2000, 0.01) FROM generate_series(1001, 2000) i));
INSERT INTO fixture_filters
  SELECT 'union_agg_int8', 'int8', 3000, bloom_union_agg(f)
  FROM (SELECT bloom_agg(fixture_int8(i), 3000, 0.01) AS f FROM generate_series(1, 3000) i
        GROUP BY bloom_shard(fixture_int8(i), 3)) shards;
DO $$
DECLARE f bloom := bloom_empty(300, 1e-6);
BEGIN
  FOR i IN 1 .. 300 LOOP f := bloom_add(f, fixture_text(i)); END LOOP;
  INSERT INTO fixture_filters VALUES ('added_text_p1e-6', 'text', 300, f);
END $$;
INSERT INTO fixture_filters
  SELECT 'large_text', 'text', 200000, bloom_agg(fixture_text(i), 200000, 0.01) FROM generate_series(1, 200000) i;
INSERT INTO fixture_compressed
  SELECT 'sparse_compressed', 'text', 50, bloom_add(bloom_empty(1000000, 0.01), array_agg(fixture_text(i)))
  FROM generate_series(1, 50) i;
SQL
)

# One line per filter: its bytes, its text form, bloom_info, and the answers for its members,
# for 20,000 keys never added and for an array across the boundary; then bloom_shard's answers.
FINGERPRINT=$(cat <<'SQL'
SELECT name, key_type, members, md5(f::bytea) AS bytes_md5, md5(f::text) AS text_md5, info.*,
       (SELECT count(*) FILTER (WHERE fixture_contains(f, key_type, g))
          FROM generate_series(1, members) g) AS members_found,
       (SELECT count(*) FILTER (WHERE fixture_contains(f, key_type, g))
          FROM generate_series(members + 1, members + 20000) g) AS outsiders_found,
       md5(fixture_contains_array(f, key_type, members - 99, members + 100)::text) AS array_answers
FROM (SELECT * FROM fixture_filters UNION ALL SELECT * FROM fixture_compressed) filters,
     LATERAL bloom_info(f) info
ORDER BY name;
SELECT 'bloom_shard', md5(string_agg(concat_ws(',', bloom_shard(fixture_text(g), 64),
                                                    bloom_shard(fixture_bytea(g), 7),
                                                    bloom_shard(fixture_int8(g), 1000),
                                                    bloom_shard(fixture_uuid(g), 3)), ';' ORDER BY g))
FROM generate_series(1, 2000) g;
SQL
)

psql_in() { # version database, SQL on standard input
  in_env "$1" psql -X -q -A -t -F ' | ' -v ON_ERROR_STOP=1 -d "$2"
}
fingerprint() { # version database
  psql_in "$1" "$2" <<<"$FINGERPRINT"
}

# The version's own filters, fingerprinted and written out in every transport.
make_fixture() {
  local v=$1 db=bloomfilter_format
  local rows="SELECT * FROM fixture_filters UNION ALL SELECT * FROM fixture_compressed"
  in_env "$v" createdb "$db" || return 1
  psql_in "$v" "$db" <<<"$FIXTURE_SCHEMA"$'\n'"$FIXTURE_DATA" || return 1
  fingerprint "$v" "$db" >"$EXCHANGE/fingerprint-$v.txt" || return 1
  in_env "$v" pg_dump -d "$db" -f "$EXCHANGE/dump-$v.sql" || return 1
  psql_in "$v" "$db" <<<"\\copy ($rows) TO '$EXCHANGE/filters-$v.copy' WITH (FORMAT binary)" || return 1
  psql_in "$v" "$db" <<<"\\copy ($rows) TO '$EXCHANGE/filters-$v.txt'" || return 1
  check_answers "$EXCHANGE/fingerprint-$v.txt"
}

# Every member found, outsiders found at about the error rate (the keys are fixed, so this is
# deterministic), and one line per filter.
check_answers() {
  awk -F ' [|] ' '
    NF < 18 { next }
    { filters++; members = $3; rate = $7; found = $16; outsiders = $17 }
    found != members { print "matrix: " $1 ": " found " of " members " members found" > "/dev/stderr"; bad = 1 }
    members > 0 && outsiders > 20000 * rate * 1.3 + 10 {
      print "matrix: " $1 ": " outsiders " of 20000 outsiders found at error_rate " rate > "/dev/stderr"; bad = 1 }
    END { if (filters != 12) { print "matrix: " filters " filters, expected 12" > "/dev/stderr"; bad = 1 }
          exit bad }' "$1"
}

# Compares a fingerprint with the one taken where the filters were made: prints identical or
# DIFFERENT (and the differing lines on standard error).
same_fingerprint() { # made-on version, fingerprint file
  if cmp -s "$EXCHANGE/fingerprint-$1.txt" "$2"; then
    echo "identical"
  else
    diff "$EXCHANGE/fingerprint-$1.txt" "$2" | head -n 20 >&2
    echo "DIFFERENT"
  fi
}

# On version v: load what version w wrote, in each transport, and compare.
read_fixture() {
  local v=$1 w=$2 line db result
  line=$(printf '  made on %-3s read on %-3s' "$w" "$v")
  if [ "$w" -lt "$v" ]; then
    db=restored_$w
    in_env "$v" createdb "$db"
    if in_env "$v" psql -X -q -v ON_ERROR_STOP=1 -d "$db" -f "$EXCHANGE/dump-$w.sql" \
         >"$LOGS/restore-$w-on-$v.log" 2>&1; then
      fingerprint "$v" "$db" >"$EXCHANGE/restored-$w-on-$v.txt"
      result=$(same_fingerprint "$w" "$EXCHANGE/restored-$w-on-$v.txt")
      [ "$result" = identical ] || FORMAT_FAILED=1
    else
      cat "$LOGS/restore-$w-on-$v.log" >&2
      result="FAILED"
      FORMAT_FAILED=1
    fi
    line+="  pg_dump: $(printf '%-9s' "$result")"
  else
    line+="  pg_dump: $(printf '%-9s' "n/a")"
  fi
  local format
  for format in binary text; do
    db=copied_${format}_$w
    in_env "$v" createdb "$db"
    local file=$EXCHANGE/filters-$w.copy option="WITH (FORMAT binary)"
    [ "$format" = text ] && file=$EXCHANGE/filters-$w.txt option=""
    if psql_in "$v" "$db" <<<"$FIXTURE_SCHEMA"$'\n'"\\copy fixture_filters FROM '$file' $option" \
         >"$LOGS/copy-$format-$w-on-$v.log" 2>&1; then
      fingerprint "$v" "$db" >"$EXCHANGE/copied-$format-$w-on-$v.txt"
      result=$(same_fingerprint "$w" "$EXCHANGE/copied-$format-$w-on-$v.txt")
      [ "$result" = identical ] || FORMAT_FAILED=1
    else
      cat "$LOGS/copy-$format-$w-on-$v.log" >&2
      result="FAILED"
      FORMAT_FAILED=1
    fi
    line+="  $format COPY: $(printf '%-9s' "$result")"
  done
  FORMAT_LINES+=("$line")
}

# ---- The run -----------------------------------------------------------------------------------

declare -A BUILD SUITE CITUS SERVER SECONDS_OF
FAILED=0
FORMAT_FAILED=0
FORMAT_LINES=()
READY=()   # versions whose cluster runs with the extension installed and its fixture made

for v in "${VERSIONS[@]}"; do
  began=$(date +%s)
  echo "== PostgreSQL $v ($(where_of "$v"))"
  BUILD_RESULT="not built"
  SUITE_RESULT="not run"
  CITUS_RESULT="not run"
  with_citus "$v" || CITUS_RESULT="-"
  SERVER[$v]="?"
  if prepare "$v" && SERVER[$v]=$(in_env "$v" "$(pg_config_of "$v")" --version) && build "$v"; then
    if start_cluster "$v"; then
      run_suite "$v" || FAILED=1
      if make_fixture "$v"; then
        READY+=("$v")
      else
        echo "matrix: the format check's filters could not be made, or answered wrongly, on $v" >&2
        FORMAT_FAILED=1
      fi
      if with_citus "$v"; then
        run_citus "$v" || FAILED=1
      fi
    else
      SUITE_RESULT="FAILED: cluster did not start"
      FAILED=1
    fi
  else
    FAILED=1
  fi
  BUILD[$v]=$BUILD_RESULT
  SUITE[$v]=$SUITE_RESULT
  CITUS[$v]=$CITUS_RESULT
  SECONDS_OF[$v]=$(($(date +%s) - began))
  echo "   build: ${BUILD[$v]}; suite: ${SUITE[$v]}; Citus: ${CITUS[$v]} (${SECONDS_OF[$v]} s)"
done

if [ ${#READY[@]} -ge 2 ]; then
  echo "== byte format across versions (results in the summary)"
  first=${READY[0]}
  for v in "${READY[@]}"; do
    [ "$v" = "$first" ] && continue
    result=$(same_fingerprint "$first" "$EXCHANGE/fingerprint-$v.txt")
    [ "$result" = identical ] || FORMAT_FAILED=1
    FORMAT_LINES+=("$(printf '  made on %-3s and on %-3s from the same SQL: %s' "$first" "$v" "$result")")
  done
  for v in "${READY[@]}"; do
    for w in "${READY[@]}"; do
      [ "$v" = "$w" ] || read_fixture "$v" "$w"
    done
  done
fi
for v in "${STARTED[@]}"; do stop_cluster "$v"; done

total=$(($(date +%s) - STARTED_AT))
echo
echo "== summary"
printf '%-8s %-20s %-42s %-24s %-26s %s\n' version where server build suite 'Citus (TAP)'
for v in "${VERSIONS[@]}"; do
  printf '%-8s %-20s %-42s %-24s %-26s %s (%d s)\n' "$v" "$(where_of "$v")" "${SERVER[$v]}" "${BUILD[$v]}" \
    "${SUITE[$v]}" "${CITUS[$v]}" "${SECONDS_OF[$v]}"
done
[ ${#CITUS_VERSIONS[@]} -eq 0 ] || [ -d "$VENDOR" ] || echo "Citus: not run, no vendored sources in $VENDOR"
if [ ${#READY[@]} -ge 2 ]; then
  echo "byte format: these filters made on ${READY[0]} (and the same SQL elsewhere), compared by md5 of"
  echo "f::bytea and f::text, all of bloom_info, bloom_contains of members, of 20,000 outsiders and of"
  echo "an array, and bloom_shard of 4 x 2,000 keys:"
  awk -F ' [|] ' 'NF >= 18 { printf "  %-18s %-5s %9d bytes  md5 %s  members found %6d/%-6d  outsiders %4d/20000\n", $1, $2, $10, $4, $16, $3, $17 }' \
    "$EXCHANGE/fingerprint-${READY[0]}.txt"
  printf '%s\n' "${FORMAT_LINES[@]}"
else
  echo "byte format: not checked (needs two versions that ran)"
fi
printf 'total time: %dm%02ds\n' $((total / 60)) $((total % 60))
[ "$FAILED" -eq 0 ] && [ "$FORMAT_FAILED" -eq 0 ]
