#!/usr/bin/env bash
# Survival of bloom values and bloomfilter indexes on throwaway clusters:
#   1. pg_dump and restore into fresh databases: custom format (pg_restore, serial and -j 2) and
#      plain format (psql). Every bloom value comes back byte-identical and stored as before; the
#      bloomfilter indexes come back with their definitions, rebuilt to the source's filters byte
#      for byte, and keep adding new rows.
#   2. Binary COPY out and back in (psql \copy): byte-identical.
#   3. Crash recovery: concurrent adds (pgbench) into a single-row filter and into a table with a
#      bloomfilter index, SIGKILL of the postmaster in the middle, restart with fsync = on; every
#      committed email is found, the single-row filter equals one rebuilt from the committed rows,
#      and the index holds at least their bits.
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
# The source database: bloom values in every storage form, and two bloomfilter indexes.
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

-- bloomfilter indexes: one over a text column (the default error rate), one over a bigint
-- column of a table in another schema (p = 0.001).
CREATE TABLE users (id bigserial PRIMARY KEY, email text NOT NULL UNIQUE);
INSERT INTO users (email) SELECT 'user' || i || '@mail.com' FROM generate_series(1, 20000) i;
CREATE INDEX users_email_bloom ON users USING bloomfilter (email) WITH (capacity = 100000);
CREATE SCHEMA app;
CREATE TABLE app.accounts (id bigint PRIMARY KEY);
INSERT INTO app.accounts SELECT generate_series(1, 5000);
CREATE INDEX accounts_id_bloom ON app.accounts USING bloomfilter (id) WITH (capacity = 50000, error_rate = 0.001);
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
# Each bloomfilter index: its definition, whether it is valid, and its filter's length and md5.
indexes_sql="
  SELECT pg_get_indexdef(i.indexrelid), i.indisvalid, octet_length(bloom_index_filter(i.indexrelid)::bytea),
         md5(bloom_index_filter(i.indexrelid)::bytea)
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam
  WHERE a.amname = 'bloomfilter' ORDER BY 1"
# Each index's filter against bloom_agg over its table's rows, with the index's capacity and
# error rate: equal, byte for byte, right after a build.
agg_equal_sql="
  SELECT (SELECT bloom_index_filter('users_email_bloom') = bloom_agg(email, 100000, 0.01) FROM users)
         || ' ' || (SELECT bloom_index_filter('app.accounts_id_bloom') = bloom_agg(id, 50000, 0.001) FROM app.accounts)"
false_negatives_sql="
  SELECT (SELECT count(*) FROM users WHERE NOT bloom_index_contains('users_email_bloom', email))
       + (SELECT count(*) FROM app.accounts WHERE NOT bloom_index_contains('app.accounts_id_bloom', id))"

source_values=$(query source "$values_sql")
same "source: bloom values stored inline, out of line, compressed and NULL" \
  "$(printf '%s\n' 'compressed_filters|empty_1m|compressed pglz' 'compressed_filters|sparse_1m|compressed pglz' \
       'filters|emails_1m|out-of-line' 'filters|empty|inline' 'filters|null|null' 'filters|rate_0.001|out-of-line' \
       'filters|small|inline')" \
  "$(cut -d'|' -f1,2,5 <<<"$source_values")"
same "source: the 1M-email filter is 1,204,260 bytes (2,352 blocks of 512 bytes and the header)" "1204260" \
  "$(query source "SELECT octet_length(f::bytea) FROM filters WHERE name = 'emails_1m'")"
source_indexes=$(query source "$indexes_sql")
same "source: two valid bloomfilter indexes, text and bigint (definition, valid, bytes)" \
  "$(printf '%s\n' \
       "CREATE INDEX accounts_id_bloom ON app.accounts USING bloomfilter (id) WITH (capacity='50000', error_rate='0.001')|t|92196" \
       "CREATE INDEX users_email_bloom ON public.users USING bloomfilter (email) WITH (capacity='100000')|t|120868")" \
  "$(cut -d'|' -f1-3 <<<"$source_indexes")"
same "source: each index's filter equals bloom_agg over its rows" "true true" "$(query source "$agg_equal_sql")"
same "source: every row found by bloom_index_contains (false negatives)" "0" "$(query source "$false_negatives_sql")"

###############################################################################################
# 1. pg_dump and restore into fresh databases.
###############################################################################################
pg_dump -Fc -d source -f "$work/source.dump"
pg_dump -Fp -d source -f "$work/source.sql"
# Parallel pg_restore loads the tables and builds the indexes at the same time.
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
  # The indexes are built again from the restored rows: the same filters, byte for byte.
  same "  $db: bloomfilter indexes restored: same definitions, valid, filters byte-identical to the source's" \
    "$source_indexes" "$(query "$db" "$indexes_sql")"
  same "  $db: each index's filter equals bloom_agg over the restored rows" "true true" "$(query "$db" "$agg_equal_sql")"
  same "  $db: every restored row found by bloom_index_contains (false negatives)" "0" "$(query "$db" "$false_negatives_sql")"
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
# indexes add exactly what the original ones add.
workload_sql="
  INSERT INTO users (email) SELECT 'after' || i || '@mail.com' FROM generate_series(1, 1000) i;
  UPDATE users SET email = 'renamed' || id || '@mail.com' WHERE id <= 100;
  INSERT INTO app.accounts SELECT generate_series(100001, 100500);"
# The 1,600 keys the writes add: how many an index says are (probably) there.
new_keys_found_sql="
  SELECT (SELECT count(*) FILTER (WHERE bloom_index_contains('users_email_bloom', 'after' || i || '@mail.com'))
          FROM generate_series(1, 1000) i)
       + (SELECT count(*) FILTER (WHERE bloom_index_contains('users_email_bloom', 'renamed' || i || '@mail.com'))
          FROM generate_series(1, 100) i)
       + (SELECT count(*) FILTER (WHERE bloom_index_contains('app.accounts_id_bloom', i::bigint))
          FROM generate_series(100001, 100500) i)"
# Deletes and updates clear no bits: after the writes, each filter's bits (past the 36-byte
# header, whose count of keys is the build's) are those of bloom_agg over the rows and over the
# emails the update replaced.
bits_sql="
  SELECT (SELECT substring(bloom_index_filter('users_email_bloom')::bytea FROM 37)
                 = substring(bloom_agg(e, 100000, 0.01)::bytea FROM 37)
          FROM (SELECT email FROM users UNION ALL SELECT 'user' || i || '@mail.com' FROM generate_series(1, 100) i) k (e))
         || ' ' || (SELECT substring(bloom_index_filter('app.accounts_id_bloom')::bytea FROM 37)
                           = substring(bloom_agg(id, 50000, 0.001)::bytea FROM 37) FROM app.accounts)"
for db in source $restored; do
  found_before=$(query "$db" "$new_keys_found_sql")
  query "$db" "$workload_sql" >/dev/null
  same "writes, $db: the 1,100 new and changed emails and 500 new ids are found ($found_before of the 1,600 were false positives before)" \
    "1600 yes" "$(query "$db" "$new_keys_found_sql") $([ "$found_before" -lt 100 ] && echo yes || echo "no: $found_before found before")"
  same "  $db: every row found by bloom_index_contains (false negatives)" "0" "$(query "$db" "$false_negatives_sql")"
  same "  $db: the filters' bits are bloom_agg's over every key written" "true true" "$(query "$db" "$bits_sql")"
  [ "$db" = source ] && source_indexes=$(query source "$indexes_sql") && continue
  same "  $db: filters byte-identical to the source's after the same writes" "$source_indexes" "$(query "$db" "$indexes_sql")"
  # Growing: a new capacity, taken by a rebuild that does not block writers.
  psql -X -q -v ON_ERROR_STOP=1 -d "$db" -c "ALTER INDEX users_email_bloom SET (capacity = 200000)" \
    -c "REINDEX INDEX CONCURRENTLY users_email_bloom" \
    -c "INSERT INTO users (email) VALUES ('after.reindex@mail.com')" >/dev/null
  same "  $db: ALTER INDEX SET (capacity), REINDEX CONCURRENTLY: new capacity, build of every row, then an insert is found" \
    "200000|$(($(query "$db" "SELECT count(*) FROM users") - 1))|f|t|0" \
    "$(query "$db" "SELECT capacity, inserted, needs_rebuild, bloom_index_contains('users_email_bloom', 'after.reindex@mail.com'),
                           (SELECT count(*) FROM users WHERE NOT bloom_index_contains('users_email_bloom', email))
                    FROM bloom_index_info('users_email_bloom')")"
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
-- A bloomfilter index: each insert sets its key's bits in one page of the index, WAL-logged.
CREATE TABLE users (id bigserial PRIMARY KEY, email text NOT NULL UNIQUE);
INSERT INTO users (email) SELECT 'user' || i || '@mail.com' FROM generate_series(1, 100000) i;
CREATE INDEX users_email_bloom ON users USING bloomfilter (email) WITH (capacity = 1000000);
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
cat > "$work/index.sql" <<'SQL'
\set n random(1, 1000000000000)
INSERT INTO users (email) VALUES ('m' || :client_id || '-' || :n || '@mail.com');
SQL
# Adds that roll back must leave no trace in the single-row filter (an index keeps their bits).
cat > "$work/rollback.sql" <<'SQL'
\set n random(1, 1000000000000)
BEGIN;
INSERT INTO committed (email) VALUES ('rb' || :client_id || '-' || :n || '@mail.com');
UPDATE f SET f = bloom_add(f, 'rb' || :client_id || '-' || :n || '@mail.com') WHERE id = 1;
INSERT INTO users (email) VALUES ('rb' || :client_id || '-' || :n || '@mail.com');
ROLLBACK;
SQL
pgbench -n -h 127.0.0.1 -p "$PGPORT" -c "$CLIENTS" -j 2 -T 60 -M prepared \
  -f "$work/single.sql@4" -f "$work/index.sql@5" -f "$work/rollback.sql@1" crash \
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
read -r single_committed index_committed <<<"$(query crash "$committed_sql")"
read -r single_before index_before <<<"$before_kill"
same "crash: every add seen committed before the kill is still there ($single_before single-row and $index_before indexed then, $single_committed and $index_committed after recovery)" \
  "yes" "$([ "$single_before" -gt 0 ] && [ "$index_before" -gt 0 ] && [ "$single_committed" -ge "$single_before" ] \
           && [ "$index_committed" -ge "$index_before" ] && echo yes || echo no)"
same "crash: no corruption in the heap and TOAST of the single-row filter and the indexed table (amcheck)" "0" \
  "$(query crash "SELECT (SELECT count(*) FROM verify_heapam('f', check_toast => true))
                       + (SELECT count(*) FROM verify_heapam('users', check_toast => true))")"
same "crash: single-row filter: every committed email found (false negatives)" "0" \
  "$(query crash "SELECT count(*) FROM committed c, f WHERE f.id = 1 AND NOT bloom_contains(f.f, c.email)")"
same "crash: single-row filter equals bloom_agg over the committed emails (nothing lost, nothing rolled back kept)" "t" \
  "$(query crash "SELECT f = (SELECT coalesce(bloom_agg(email, 100000, 0.01), bloom_empty(100000)) FROM committed) FROM f WHERE id = 1")"
same "crash: bloomfilter index: valid, every committed email found (false negatives)" "t|0" \
  "$(query crash "SELECT indisvalid, (SELECT count(*) FROM users WHERE NOT bloom_index_contains('users_email_bloom', email))
                  FROM pg_index WHERE indexrelid = 'users_email_bloom'::regclass")"
# Rolled-back inserts, and those in flight at the kill, may have left bits: the index holds
# every bit of bloom_agg over the committed rows, and perhaps more. Its union with that
# filter is itself (past the 36-byte header, whose count of keys is the build's).
agg_sql="SELECT bloom_agg(email, 1000000, 0.01) FROM users"
same "crash: bloomfilter index holds every bit of bloom_agg over the committed rows" "t" \
  "$(query crash "SELECT substring((bloom_index_filter('users_email_bloom') | ($agg_sql))::bytea FROM 37)
                         = substring(bloom_index_filter('users_email_bloom')::bytea FROM 37)")"
psql -X -q -v ON_ERROR_STOP=1 -d crash -c "REINDEX INDEX CONCURRENTLY users_email_bloom" >/dev/null
same "crash: bloomfilter index after REINDEX CONCURRENTLY equals bloom_agg over the committed rows, needs no rebuild" "t|f" \
  "$(query crash "SELECT bloom_index_filter('users_email_bloom') = ($agg_sql), needs_rebuild FROM bloom_index_info('users_email_bloom')")"

echo "survival: $((checks - failures)) of $checks checks passed in $((SECONDS - started)) s"
[ "$failures" -eq 0 ]
