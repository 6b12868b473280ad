#!/usr/bin/env bash
# Limits: the largest filter a PostgreSQL value can hold, query cancel inside long loops, and the
# memory of bloom_agg over 10M rows. Run by `make test`; fails on any unmet check.
set -euo pipefail
cd "$(dirname "$0")/.."
. test/cluster.sh
trap cluster_cleanup_all EXIT
cluster_start limits "max_parallel_workers_per_gather = 0" "work_mem = 64MB"
psql -X -q -c "CREATE EXTENSION bloomfilter"
status=0
check() {  # check NAME t-or-f DETAIL
  if [ "$2" = t ]; then echo "ok   $1: $3"; else echo "FAIL $1: $3"; status=1; fi
}
query() { psql -X -At -v ON_ERROR_STOP=1 -c "$1"; }
error_of() {  # runs SQL, prints "SQLSTATE seconds" of its error (or "none seconds")
  python3 - "$1" <<'PY'
import subprocess, sys, time
sql = sys.argv[1]
start = time.monotonic()
p = subprocess.run(["psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", "-v", "VERBOSITY=sqlstate",
                    "-c", "\\set VERBOSITY sqlstate", "-c", sql], capture_output=True, text=True)
elapsed = time.monotonic() - start
err = p.stderr.strip().splitlines()
code = err[-1].split()[-1] if p.returncode and err else "none"
print(code, f"{elapsed:.2f}")
PY
}

# 1. The largest filter: 891,720,653 keys at 1% fit under the 1 GB limit; one more key does not.
largest=891720653
read -r bytes <<<"$(query "SELECT bytes FROM bloom_info(bloom_empty($largest, 0.01))")"
check "largest filter" "$([ "$bytes" -le 1073741823 ] && echo t || echo f)" "capacity $largest at 1% is $bytes bytes"
read -r code _ <<<"$(error_of "SELECT bloom_empty($((largest + 1)), 0.01)")"
check "one key more" "$([ "$code" = 22023 ] && echo t || echo f)" "bloom_empty($((largest + 1)), 0.01) fails with $code"
query "CREATE TABLE huge (id int, f bloom); INSERT INTO huge SELECT 1, bloom_add(bloom_empty($largest, 0.01), 'user7@mail.com'::text)" >/dev/null
read -r found ghost stored <<<"$(query "SELECT bloom_contains(f, 'user7@mail.com'), bloom_contains(f, 'ghost@mail.com'), pg_column_size(f) FROM huge" | tr '|' ' ')"
check "largest filter stored" "$([ "$found $ghost" = "t f" ] && echo t || echo f)" "stored $stored bytes out of line; user7 $found, ghost $ghost (slice reads)"
read -r code _ <<<"$(error_of "SELECT f::text FROM huge")"
check "text output refused" "$([ "$code" = 54000 ] && echo t || echo f)" "its text form would pass 1 GB: $code"
query "DROP TABLE huge" >/dev/null

# 2. statement_timeout cancels long loops within about a second of firing.
query "CREATE TABLE keys AS SELECT array_agg('user' || i || '@mail.com') AS a FROM generate_series(1, 10000000) i" >/dev/null
read -r code seconds <<<"$(error_of "SET statement_timeout = '300ms'; SELECT bloom_add(bloom_empty(10000000), a) IS NULL FROM keys")"
check "cancel bloom_add(f, text[10M])" "$(python3 -c "print('t' if '$code' == '57014' and $seconds < 1.5 else 'f')")" "$code after ${seconds}s"
read -r code seconds <<<"$(error_of "SET statement_timeout = '300ms'; SELECT bloom_contains(bloom_empty(10000000), a) IS NULL FROM keys")"
check "cancel bloom_contains(f, text[10M])" "$(python3 -c "print('t' if '$code' == '57014' and $seconds < 1.5 else 'f')")" "$code after ${seconds}s"
read -r code seconds <<<"$(error_of "SET statement_timeout = '300ms'; SELECT bloom_union(bloom_empty(500000000), bloom_empty(500000000)) IS NULL")"
check "cancel bloom_union of 600 MB filters" "$(python3 -c "print('t' if '$code' == '57014' and $seconds < 1.5 else 'f')")" "$code after ${seconds}s"
query "DROP TABLE keys; CREATE TABLE emails AS SELECT 'user' || i || '@mail.com' AS email FROM generate_series(1, 10000000) i" >/dev/null
# Serial, so that the whole of it runs in this backend's loops, and a timeout well under its
# length (about a second), so that it fires whatever the machine's speed.
read -r code seconds <<<"$(error_of "SET max_parallel_workers_per_gather = 0; SET statement_timeout = '300ms'; SELECT bloom_agg(email) IS NULL FROM emails")"
check "cancel bloom_agg over 10M rows" "$(python3 -c "print('t' if '$code' == '57014' and $seconds < 1.5 else 'f')")" "$code after ${seconds}s"

# 3. Memory of bloom_agg(email) over 10M distinct rows: at most the filter plus 16 bytes per
#    distinct key, above what count(email) over the same rows needs (the backend's peak RSS).
cat > "$CLUSTER_ROOT/memory.sql" <<'SQL'
SELECT pg_backend_pid() AS pid \gset
SELECT count(email) FROM emails \g /dev/null
SELECT (regexp_match(pg_read_file('/proc/' || :pid || '/status'), 'VmHWM:\s+(\d+)'))[1]::bigint * 1024 AS base \gset
SELECT bloom_agg(email) IS NULL FROM emails \g /dev/null
SELECT :base, (regexp_match(pg_read_file('/proc/' || :pid || '/status'), 'VmHWM:\s+(\d+)'))[1]::bigint * 1024,
       (SELECT bytes FROM bloom_info(bloom_empty(10000000)));
SQL
read -r base agg filter_bytes <<<"$(psql -X -q -At -F ' ' -f "$CLUSTER_ROOT/memory.sql")"
bound=$((filter_bytes + 16 * 10000000))
used=$((agg - base))
check "bloom_agg memory, 10M rows" "$([ "$used" -le "$bound" ] && echo t || echo f)" \
  "peak RSS grew by $((used / 1048576)) MiB; bound: filter $((filter_bytes / 1048576)) MiB + 16 B x 10M = $((bound / 1048576)) MiB"
exit $status
