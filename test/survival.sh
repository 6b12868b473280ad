#!/usr/bin/env bash
# Survival of bloom values and maintained filters on throwaway clusters:
#   1. pg_dump and restore into fresh databases: custom format (pg_restore, serial and -j 2) and
#      plain format (psql). Every bloom value comes back byte-identical and stored as before, the
#      maintained filters' config and shards come back, and their triggers keep adding.
#   2. Binary COPY out and back in (psql \copy): byte-identical.
#   3. Crash recovery: concurrent adds (pgbench) into a single-row filter and into a table with a
#      maintained filter, SIGKILL of the postmaster in the middle, restart with fsync = on; every
#      committed email is found, and each filter equals one rebuilt from the committed rows.
# Prints one line per check and exits non-zero when any fails. Used by `make test`.
#   test/survival.sh [seconds of concurrent adds before the kill, default 4]
set -euo pipefail
cd "$(dirname "$0")/.."
CRASH_AFTER=${1:-4}
CLIENTS=${CLIENTS:-8}
. test/cluster.sh
trap cluster_cleanup_all EXIT
started=$SECONDS

checks=0
failures=0
pass() { checks=$((checks + 1)); printf 'ok    %s\n' "$1"; }
fail() { checks=$((checks + 1)); failures=$((failures + 1)); printf 'FAIL  %s\n' "$1"; }
# same CHECK EXPECTED ACTUAL: passes when both texts are identical, otherwise shows the difference.
same() {
  if [ "$2" == "$3" ]; then
    pass "$1"
  else
    fail "$1"
    diff <(printf '%s\n' "$2") <(printf '%s\n' "$3") | head -20 | sed 's/^/        /' || true
  fi
}
without_restrict_key() { grep -v '^\\\(un\)\?restrict ' "$1"; }
# query DB SQL: the result, unaligned, one row per line.
query() { psql -X -q -At -v ON_ERROR_STOP=1 -d "$1" -c "$2"; }

cluster_start survival
work=$CLUSTER_ROOT/survival-files
mkdir -p "$work"

###############################################################################################
# The source database: bloom values in every storage form, and two maintained filters.
###############################################################################################
createdb source
psql -X -q -v ON_ERROR_STOP=1 -d source >/dev/null <<'SQL'
CREATE EXTENSION bloomfilter;
CREATE TABLE filters (name text PRIMARY KEY, f bloom);
INSERT INTO filters VALUES
  ('empty', bloom_empty(1000)),
  ('small', bloom_add(bloom_empty(100), ARRAY['alice@mail.com', 'bob@mail.com', 'carol@mail.com'])),
  ('null', NULL);
-- 1,000,000 emails: 1,204,260 bytes, out of line and uncompressed (the type's STORAGE external).
INSERT INTO filters SELECT 'emails_1m', bloom_agg('user' || i || '@mail.com') FROM generate_series(1, 1000000) i;
-- p = 0.001: 10 hashes, 16384-bit blocks.
INSERT INTO filters SELECT 'rate_0.001', bloom_agg(i::bigint, 50000, 0.001) FROM generate_series(1, 20000) i;
-- Sparse filters compress: a column set to STORAGE extended keeps them compressed.
CREATE TABLE compressed_filters (name text PRIMARY KEY, f bloom);
ALTER TABLE compressed_filters ALTER COLUMN f SET STORAGE EXTENDED;
INSERT INTO compressed_filters SELECT 'sparse_1m', bloom_agg('user' || i || '@mail.com', 1000000, 0.01) FROM generate_series(1, 1000) i;
INSERT INTO compressed_filters VALUES ('empty_1m', bloom_empty(1000000));

-- Maintained filters: one over a text column (128 inline shards), one over a bigint column of a
-- table in another schema (4 out-of-line shards).
CREATE TABLE users (id bigserial PRIMARY KEY, email text NOT NULL UNIQUE);
INSERT INTO users (email) SELECT 'user' || i || '@mail.com' FROM generate_series(1, 20000) i;
SELECT bloom_filter_create('users_email', 'users', 'email', 100000);
CREATE SCHEMA app;
CREATE TABLE app.accounts (id bigint PRIMARY KEY);
INSERT INTO app.accounts SELECT generate_series(1, 5000);
SELECT bloom_filter_create('accounts_id', 'app.accounts', 'id', 50000, 0.001, 4);
SQL

# Every bloom value: its md5, length and how it is stored.
values_sql="
  SELECT 'filters', name, coalesce(md5(f::bytea), 'NULL'), coalesce(octet_length(f::bytea), 0),
         CASE WHEN f IS NULL THEN 'null' WHEN pg_column_compression(f) IS NOT NULL THEN 'compressed ' || pg_column_compression(f)
              WHEN pg_column_size(f) < 2000 THEN 'inline' ELSE 'out-of-line' END
  FROM filters
  UNION ALL
  SELECT 'compressed_filters', name, coalesce(md5(f::bytea), 'NULL'), coalesce(octet_length(f::bytea), 0),
         CASE WHEN f IS NULL THEN 'null' WHEN pg_column_compression(f) IS NOT NULL THEN 'compressed ' || pg_column_compression(f)
              WHEN pg_column_size(f) < 2000 THEN 'inline' ELSE 'out-of-line' END
  FROM compressed_filters
  ORDER BY 1, 2"
# Each maintained filter: its config row, its shard count and the md5 of its shards' md5s.
maintained_sql="
  SELECT c.*, count(s.shard), md5(string_agg(md5(s.f::bytea), ',' ORDER BY s.shard))
  FROM bloom_filters c LEFT JOIN bloom_filter_shards s USING (name) GROUP BY c.name ORDER BY c.name"
triggers_sql="SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal ORDER BY 1"
false_negatives_sql="
  SELECT (SELECT count(*) FROM users WHERE NOT bloom_filter_contains('users_email', email))
       + (SELECT count(*) FROM app.accounts WHERE NOT bloom_filter_contains('accounts_id', id))"
inserted_sql="SELECT (SELECT inserted FROM bloom_filter_health('users_email')) || ' ' || (SELECT inserted FROM bloom_filter_health('accounts_id'))"

source_values=$(query source "$values_sql")
same "source: bloom values stored inline, out of line, compressed and NULL" \
  "$(printf '%s\n' 'compressed_filters|empty_1m|compressed pglz' 'compressed_filters|sparse_1m|compressed pglz' \
       'filters|emails_1m|out-of-line' 'filters|empty|inline' 'filters|null|null' 'filters|rate_0.001|out-of-line' \
       'filters|small|inline')" \
  "$(cut -d'|' -f1,2,5 <<<"$source_values")"
same "source: the 1M-email filter is 1,204,260 bytes (2,352 blocks of 512 bytes and the header)" "1204260" \
  "$(query source "SELECT octet_length(f::bytea) FROM filters WHERE name = 'emails_1m'")"
source_maintained=$(query source "$maintained_sql")
source_triggers=$(query source "$triggers_sql")

###############################################################################################
# 1. pg_dump and restore into fresh databases.
###############################################################################################
pg_dump -Fc -d source -f "$work/source.dump"
pg_dump -Fp -d source -f "$work/source.sql"
# Parallel pg_restore loads the two config tables' rows at the same time: they must restore in
# any order.
restored=""
for db in restored_custom restored_parallel restored_plain; do
  createdb "$db"
  case $db in
    restored_custom) label="custom format (pg_dump -Fc, pg_restore)"
      pg_restore --exit-on-error -d "$db" "$work/source.dump" 2>"$work/$db.err" && rc=0 || rc=$? ;;
    restored_parallel) label="custom format (pg_dump -Fc, pg_restore -j 2)"
      pg_restore --exit-on-error -j 2 -d "$db" "$work/source.dump" 2>"$work/$db.err" && rc=0 || rc=$? ;;
    restored_plain) label="plain format (pg_dump, psql)"
      psql -X -q -v ON_ERROR_STOP=1 -d "$db" -f "$work/source.sql" >/dev/null 2>"$work/$db.err" && rc=0 || rc=$? ;;
  esac
  if [ "$rc" -ne 0 ] || [ -s "$work/$db.err" ]; then
    fail "restore, $label: restores without an error or warning"
    sed 's/^/        /' "$work/$db.err" | head -20
    continue
  fi
  restored="$restored $db"
  pass "restore, $label: restores without an error or warning"
  same "  $db: every bloom value byte-identical, stored as before ($(wc -l <<<"$source_values") values)" \
    "$source_values" "$(query "$db" "$values_sql")"
  same "  $db: maintained filters' config and shards identical" "$source_maintained" "$(query "$db" "$maintained_sql")"
  same "  $db: maintained filters' triggers restored" "$source_triggers" "$(query "$db" "$triggers_sql")"
  # A dump of the restored database is the original dump (bar the per-dump \restrict key).
  pg_dump -Fp -d "$db" -f "$work/$db.sql"
  if diff <(without_restrict_key "$work/source.sql") <(without_restrict_key "$work/$db.sql") >"$work/$db.diff"; then
    pass "  $db: dumps again to the same plain dump"
  else
    fail "  $db: dumps again to the same plain dump"
    head -20 "$work/$db.diff" | cut -c1-200 | sed 's/^/        /'
  fi
done

# The same inserts and updates in the source and in every restored database: the restored
# triggers add exactly what the original ones add.
workload_sql="
  INSERT INTO users (email) SELECT 'after' || i || '@mail.com' FROM generate_series(1, 1000) i;
  UPDATE users SET email = 'renamed' || id || '@mail.com' WHERE id <= 100;
  INSERT INTO app.accounts SELECT generate_series(100001, 100500);"
for db in source $restored; do
  read -r users_before accounts_before <<<"$(query "$db" "$inserted_sql")"
  query "$db" "$workload_sql" >/dev/null
  read -r users_after accounts_after <<<"$(query "$db" "$inserted_sql")"
  same "triggers, $db: 1,100 new and changed emails and 500 new ids added" \
    "1100 500" "$((users_after - users_before)) $((accounts_after - accounts_before))"
  same "  $db: every row found in its maintained filter (false negatives)" "0" "$(query "$db" "$false_negatives_sql")"
  [ "$db" = source ] && source_maintained=$(query source "$maintained_sql") && continue
  same "  $db: shards byte-identical to the source's after the same writes" "$source_maintained" "$(query "$db" "$maintained_sql")"
  query "$db" "SELECT bloom_filter_rebuild('users_email', shards => 8);
               INSERT INTO users (email) VALUES ('after.rebuild@mail.com');" >/dev/null
  same "  $db: bloom_filter_rebuild (new shard count, new triggers), then an insert is found" \
    "8|t|$(query "$db" "SELECT count(*) FROM users")" \
    "$(query "$db" "SELECT shards, bloom_filter_contains('users_email', 'after.rebuild@mail.com'), inserted FROM bloom_filter_health('users_email')")"
done

###############################################################################################
# 2. Binary COPY out and back in.
###############################################################################################
# Out of the source, into the same table in a fresh database.
createdb copy_target
psql -X -q -v ON_ERROR_STOP=1 -d copy_target >/dev/null <<'SQL'
CREATE EXTENSION bloomfilter;
CREATE TABLE filters (name text PRIMARY KEY, f bloom);
CREATE TABLE compressed_filters (name text PRIMARY KEY, f bloom);
ALTER TABLE compressed_filters ALTER COLUMN f SET STORAGE EXTENDED;
CREATE TABLE shards (name text, shard int, f bloom, PRIMARY KEY (name, shard));
SQL
copy_check() {
  local table=$1 target=$2 key=$3 file=$work/$1.copy
  psql -X -q -v ON_ERROR_STOP=1 -d source -c "\\copy $table TO '$file' WITH (FORMAT binary)"
  psql -X -q -v ON_ERROR_STOP=1 -d copy_target -c "\\copy $target FROM '$file' WITH (FORMAT binary)"
  local fingerprint="SELECT $key, coalesce(md5(f::bytea), 'NULL'), octet_length(f::bytea) FROM"
  same "binary COPY round trip, $table: $(query source "SELECT count(*) FROM $table") values byte-identical in a fresh database" \
    "$(query source "$fingerprint $table ORDER BY $key")" "$(query copy_target "$fingerprint $target ORDER BY $key")"
}
copy_check filters filters name
copy_check compressed_filters compressed_filters name
copy_check bloom_filter_shards shards name,shard
psql -X -q -v ON_ERROR_STOP=1 -d source <<SQL
\copy (SELECT name, f FROM filters ORDER BY name) TO '$work/send.copy' WITH (FORMAT binary)
\copy (SELECT name, f::bytea FROM filters ORDER BY name) TO '$work/bytea.copy' WITH (FORMAT binary)
SQL
if cmp -s "$work/send.copy" "$work/bytea.copy"; then
  pass "binary COPY sends the byte format: the same file as COPY of f::bytea"
else
  fail "binary COPY sends the byte format: the same file as COPY of f::bytea"
fi
cluster_stop survival

###############################################################################################
# 3. Crash recovery: SIGKILL of the postmaster during concurrent adds.
###############################################################################################
cluster_start crash "fsync = on" "synchronous_commit = on" "max_connections = 40"
crash_dir=$CLUSTER_ROOT/crash
createdb crash
psql -X -q -v ON_ERROR_STOP=1 -d crash >/dev/null <<'SQL'
CREATE EXTENSION bloomfilter;
CREATE EXTENSION amcheck;
-- A single-row filter (about 120 KB, out of line): each add rewrites it and its TOAST chunks.
CREATE TABLE f (id int PRIMARY KEY, f bloom NOT NULL);
INSERT INTO f VALUES (1, bloom_empty(100000));
CREATE TABLE committed (email text NOT NULL);
-- A maintained filter: each add updates one shard from the insert trigger.
CREATE TABLE users (id bigserial PRIMARY KEY, email text NOT NULL UNIQUE);
INSERT INTO users (email) SELECT 'user' || i || '@mail.com' FROM generate_series(1, 100000) i;
SELECT bloom_filter_create('users_email', 'users', 'email', 1000000);
VACUUM ANALYZE;
CHECKPOINT;
SQL
cat > "$work/single.sql" <<'SQL'
\set n random(1, 1000000000000)
BEGIN;
INSERT INTO committed (email) VALUES ('s' || :client_id || '-' || :n || '@mail.com');
UPDATE f SET f = bloom_add(f, 's' || :client_id || '-' || :n || '@mail.com') WHERE id = 1;
COMMIT;
SQL
cat > "$work/maintained.sql" <<'SQL'
\set n random(1, 1000000000000)
INSERT INTO users (email) VALUES ('m' || :client_id || '-' || :n || '@mail.com');
SQL
# Adds that roll back must leave no trace in either filter.
cat > "$work/rollback.sql" <<'SQL'
\set n random(1, 1000000000000)
BEGIN;
INSERT INTO committed (email) VALUES ('rb' || :client_id || '-' || :n || '@mail.com');
UPDATE f SET f = bloom_add(f, 'rb' || :client_id || '-' || :n || '@mail.com') WHERE id = 1;
INSERT INTO users (email) VALUES ('rb' || :client_id || '-' || :n || '@mail.com');
ROLLBACK;
SQL
pgbench -n -h 127.0.0.1 -p "$PGPORT" -c "$CLIENTS" -j 2 -T 60 -M prepared \
  -f "$work/single.sql@4" -f "$work/maintained.sql@5" -f "$work/rollback.sql@1" crash \
  >"$work/pgbench.log" 2>&1 &
bench_pid=$!
# A checkpoint half way, so recovery starts from one taken while adds were running.
sleep "$(python3 -c "print($CRASH_AFTER / 2)")"
query crash "CHECKPOINT"
sleep "$(python3 -c "print($CRASH_AFTER / 2)")"
committed_sql="SELECT (SELECT count(*) FROM committed) || ' ' || (SELECT count(*) FROM users) - 100000"
before_kill=$(query crash "$committed_sql")
postmaster_pid=$(head -1 "$crash_dir/data/postmaster.pid")
server_pids=$(pgrep -P "$postmaster_pid" || true)
kill -0 "$bench_pid" 2>/dev/null && bench_running=running || bench_running="not running"
kill -9 "$postmaster_pid"
# Its children notice the postmaster is gone and exit; a new postmaster starts only after that.
for _ in $(seq 1 300); do
  alive=""
  for pid in $server_pids; do kill -0 "$pid" 2>/dev/null && alive="$alive $pid"; done
  [ -z "$alive" ] && break
  sleep 0.1
done
for pid in $alive; do kill -9 "$pid" 2>/dev/null || true; done
# pgbench fails once its connections break: expected here, but no SQL error may come before.
wait "$bench_pid" || true
same "crash: postmaster killed (SIGKILL) while $CLIENTS pgbench clients were adding, after ${CRASH_AFTER} s" \
  "running, no SQL error" "$bench_running, $(grep -q 'ERROR:' "$work/pgbench.log" && echo "SQL errors" || echo "no SQL error")"
grep 'ERROR:' "$work/pgbench.log" | head -5 | sed 's/^/        /' || true
as_server_user "$PG_BIN/pg_ctl" -D "$crash_dir/data" -l "$crash_dir/server.log" -w -t 120 start >/dev/null 2>&1 \
  || { tail -30 "$crash_dir/server.log"; exit 1; }
same "crash: restarted with pg_ctl, crash recovery replayed the WAL, fsync = on" "interrupted, redo done, on" \
  "$(grep -q 'database system was interrupted' "$crash_dir/server.log" && echo interrupted || echo "no crash recovery"), $(
     grep -q 'redo done' "$crash_dir/server.log" && echo "redo done" || echo "no redo"), $(query crash "SHOW fsync")"
read -r single_committed maintained_committed <<<"$(query crash "$committed_sql")"
read -r single_before maintained_before <<<"$before_kill"
same "crash: every add seen committed before the kill is still there ($single_before single-row and $maintained_before maintained then, $single_committed and $maintained_committed after recovery)" \
  "yes" "$([ "$single_before" -gt 0 ] && [ "$maintained_before" -gt 0 ] && [ "$single_committed" -ge "$single_before" ] \
           && [ "$maintained_committed" -ge "$maintained_before" ] && echo yes || echo no)"
same "crash: no corruption in the heap and TOAST of either filter (amcheck)" "0" \
  "$(query crash "SELECT (SELECT count(*) FROM verify_heapam('f', check_toast => true))
                       + (SELECT count(*) FROM verify_heapam('bloom_filter_shards', check_toast => true))")"
same "crash: single-row filter: every committed email found (false negatives)" "0" \
  "$(query crash "SELECT count(*) FROM committed c, f WHERE f.id = 1 AND NOT bloom_contains(f.f, c.email)")"
same "crash: single-row filter equals bloom_agg over the committed emails (nothing lost, nothing rolled back kept)" "t" \
  "$(query crash "SELECT f = (SELECT coalesce(bloom_agg(email, 100000, 0.01), bloom_empty(100000)) FROM committed) FROM f WHERE id = 1")"
same "crash: maintained filter: every committed email found (false negatives)" "0" \
  "$(query crash "SELECT count(*) FROM users WHERE NOT bloom_filter_contains('users_email', email)")"
shards_sql="SELECT md5(string_agg(md5(f::bytea), ',' ORDER BY shard)) FROM bloom_filter_shards WHERE name = 'users_email'"
after_crash=$(query crash "$shards_sql")
query crash "SELECT bloom_filter_rebuild('users_email')" >/dev/null
same "crash: maintained filter equals a rebuild from the committed rows" "$(query crash "$shards_sql")" "$after_crash"

echo "survival: $((checks - failures)) of $checks checks passed in $((SECONDS - started)) s"
[ "$failures" -eq 0 ]
