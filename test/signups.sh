#!/usr/bin/env bash
# Concurrent signups (pgbench, 8 clients) into each way of keeping a filter current, then a check
# that every committed email is found. Used by `make test` (short runs) and `make bench`.
#   test/signups.sh [seconds per variant, default 5] [variants, default "single sharded index reindex"]
# Variants: plain (INSERT, unique index only), single (procedure, one filter row), sharded
# (procedure, 64 shard rows), index (INSERT into a table with a bloomfilter index), reindex (the
# same, the index rebuilt by REINDEX CONCURRENTLY in the middle of the run).
# Each variant gets its own database with 100,000 existing users; 1 signup in 10 is rolled back.
# Prints per variant: signups/s, WAL bytes per signup, committed and rolled-back counts, false
# negatives (must be 0; the script fails otherwise).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_VARIANT=${1:-5}
VARIANTS=${2:-"single sharded index reindex"}
CLIENTS=${CLIENTS:-8}
for variant in $VARIANTS; do
  case $variant in
    plain|single|sharded|index|reindex) ;;
    *) echo "signups: unknown variant $variant (plain, single, sharded, index, reindex)" >&2; exit 2 ;;
  esac
done
. test/cluster.sh
trap cluster_cleanup_all EXIT
cluster_start signups "max_connections = 40" "synchronous_commit = on" "max_wal_size = 4GB" \
  "checkpoint_timeout = 30min"
work=$CLUSTER_ROOT/pgbench
mkdir -p "$work"

procedure_of() {
  case $1 in
    plain|index|reindex) echo "" ;;
    single) echo sign_up_single ;;
    sharded) echo sign_up_sharded ;;
  esac
}
check_of() {
  case $1 in
    plain) echo "true" ;;
    single) echo "bloom_contains((SELECT f FROM email_filter WHERE id = 1), email)" ;;
    sharded) echo "bloom_contains((SELECT f FROM email_filter_shards WHERE shard = bloom_shard(email, 64)), email)" ;;
    index|reindex) echo "bloom_index_contains('users_email_bloom', email)" ;;
  esac
}

printf '%-11s %10s %14s %10s %12s %16s %16s\n' variant signups/s WAL/signup committed rolled_back rolled_back_seen false_negatives
status=0
for variant in $VARIANTS; do
  db=signup_$variant
  createdb "$db"
  psql -X -q -v ON_ERROR_STOP=1 -d "$db" >/dev/null <<SQL
CREATE EXTENSION bloomfilter;
CREATE TABLE users (id bigserial PRIMARY KEY, email text NOT NULL UNIQUE);
INSERT INTO users (email) SELECT 'user' || i || '@mail.com' FROM generate_series(0, 99999) i;
CREATE TABLE rolled_back (email text);
\i test/examples/signup.sql
SQL
  # Each variant pays only for its own filter (signup.sql made all three, the index
  # users_email_bloom among them).
  case $variant in
    plain) psql -X -q -v ON_ERROR_STOP=1 -d "$db" -c "DROP INDEX users_email_bloom; DROP TABLE email_filter, email_filter_shards" >/dev/null ;;
    index|reindex) psql -X -q -v ON_ERROR_STOP=1 -d "$db" -c "DROP TABLE email_filter, email_filter_shards" >/dev/null ;;
    single|sharded) psql -X -q -v ON_ERROR_STOP=1 -d "$db" -c "DROP INDEX users_email_bloom" >/dev/null ;;
  esac
  psql -X -q -d "$db" -c "VACUUM ANALYZE" >/dev/null
  procedure=$(procedure_of "$variant")
  if [ -n "$procedure" ]; then
    signup_sql="CALL $procedure('c' || :client_id || '-' || :n || '@mail.com');"
  else
    signup_sql="INSERT INTO users (email) VALUES ('c' || :client_id || '-' || :n || '@mail.com');"
  fi
  cat > "$work/$variant-signup.sql" <<SQL
\set n random(1, 9000000000000000000)
$signup_sql
SQL
  cat > "$work/$variant-rollback.sql" <<SQL
\set n random(1, 9000000000000000000)
BEGIN;
${signup_sql//\'c\'/\'rb\'}
ROLLBACK;
INSERT INTO rolled_back VALUES ('rb' || :client_id || '-' || :n || '@mail.com');
SQL
  chmod 644 "$work"/*.sql
  before=$(psql -XAt -d "$db" -c "SELECT pg_current_wal_lsn()")
  users_before=$(psql -XAt -d "$db" -c "SELECT count(*) FROM users")
  reindex=""
  if [ "$variant" = reindex ]; then
    # Rebuilt while the clients sign up: writers are never blocked, and no row may be missed.
    (sleep "$(( (SECONDS_PER_VARIANT + 1) / 2 ))" &&
       psql -X -q -v ON_ERROR_STOP=1 -d "$db" -c "REINDEX INDEX CONCURRENTLY users_email_bloom") \
      > "$work/reindex.log" 2>&1 &
    reindex=$!
  fi
  pgbench -n -h 127.0.0.1 -p "$PGPORT" -c "$CLIENTS" -j 2 -T "$SECONDS_PER_VARIANT" -M prepared \
    -f "$work/$variant-signup.sql@9" -f "$work/$variant-rollback.sql@1" "$db" > "$work/$variant.log" 2>&1 \
    || { cat "$work/$variant.log"; exit 1; }
  if [ -n "$reindex" ] && ! wait "$reindex"; then cat "$work/reindex.log"; exit 1; fi
  if grep -qiE 'aborted|error' "$work/$variant.log"; then cat "$work/$variant.log"; exit 1; fi
  after=$(psql -XAt -d "$db" -c "SELECT pg_current_wal_lsn()")
  seconds=$(sed -n 's/.*duration: \([0-9.]*\) s.*/\1/p' "$work/$variant.log")
  read -r committed rolled rolled_seen false_negatives wal <<<"$(psql -XAt -F ' ' -d "$db" -c "
    SELECT count(*) - $users_before,
           (SELECT count(*) FROM rolled_back),
           (SELECT count(*) FROM rolled_back r JOIN LATERAL (SELECT r.email) e ON true
             WHERE $(check_of "$variant" | sed 's/\bemail\b/r.email/g')),
           count(*) FILTER (WHERE NOT $(check_of "$variant")),
           pg_wal_lsn_diff('$after', '$before')
    FROM users")"
  rate=$(python3 -c "print(f'{$committed / $SECONDS_PER_VARIANT:.0f}')")
  wal_per=$(python3 -c "print(f'{$wal / max(1, $committed + $rolled):.0f}')")
  printf '%-11s %10s %14s %10s %12s %16s %16s\n' "$variant" "$rate" "$wal_per" "$committed" "$rolled" "$rolled_seen" "$false_negatives"
  [ "$false_negatives" -eq 0 ] || status=1
  dropdb "$db"
done
[ $status -eq 0 ] && echo "signups: every committed email is found in its filter" || echo "signups: FALSE NEGATIVES FOUND" >&2
exit $status
