# Throwaway PostgreSQL clusters for the demo, the benchmarks, the pg_regress and Python client
# runs and sqlsmith (the tests that need clusters of their own are TAP tests, t/). Source this
# file, then:
#   cluster_start NAME [setting=value ...]   initdb (UTF8, C.UTF-8) + start; exports PGHOST, PGPORT,
#                                            PGUSER, PGDATABASE
#   cluster_stop NAME                        stop and remove
#   cluster_cleanup_all                      stop and remove every cluster started (an EXIT trap)
# CLUSTER_LOG_DIR: when set, a stopped cluster's server log is kept there as NAME.log.
# The server never runs as root: when invoked as root it runs as $BLOOM_TEST_USER (postgres).
# It listens on 127.0.0.1 at a free port and on a Unix socket in its directory ($PGHOST).
PG_CONFIG=${PG_CONFIG:-pg_config}
PG_BIN=$($PG_CONFIG --bindir)
BLOOM_TEST_USER=${BLOOM_TEST_USER:-postgres}
# CLUSTER_ROOT: the directory the clusters go in; a new one under $TMPDIR (removed afterwards with
# all it holds) unless given.
if [ -z "${CLUSTER_ROOT:-}" ]; then
  CLUSTER_ROOT=$(mktemp -d -t bloomfilter-cluster.XXXXXX)
  CLUSTER_ROOT_MADE=1
fi
chmod 755 "$CLUSTER_ROOT"

# From a directory the server user can enter: the caller's (a home under /root, say) may not be,
# and initdb, pg_ctl and the server would warn that they could not change back to it.
as_server_user() {
  if [ "$(id -u)" -eq 0 ]; then (cd "$CLUSTER_ROOT" && runuser -u "$BLOOM_TEST_USER" -- "$@"); else "$@"; fi
}

# A TCP port in the dynamic range that nothing listens on (ss, from iproute2). Another program
# may take it before the server does: cluster_start then tries another.
free_port() {
  local port _
  for _ in $(seq 1 100); do
    port=$((49152 + RANDOM % 16384))
    if [ -z "$(ss -Htln "sport = :$port")" ]; then echo "$port"; return 0; fi
  done
  echo "no free TCP port found" >&2
  return 1
}

cluster_start() {
  local name=$1; shift
  local dir=$CLUSTER_ROOT/$name port try
  mkdir -p "$dir"
  [ "$(id -u)" -eq 0 ] && chown "$BLOOM_TEST_USER" "$dir"
  # Encoding and locale given, never the caller's: with no LANG (a fresh container's shell) initdb
  # would pick SQL_ASCII and the C locale.
  as_server_user "$PG_BIN/initdb" -D "$dir/data" -U postgres -A trust \
    --encoding=UTF8 --locale=C.UTF-8 --no-sync >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log"; return 1; }
  {
    echo "listen_addresses = '127.0.0.1'"
    echo "unix_socket_directories = '$dir'"
    echo "fsync = off"
    echo "max_connections = 50"
    echo "shared_buffers = 256MB"
    for setting in "$@"; do echo "$setting"; done
  } | as_server_user tee -a "$dir/data/postgresql.conf" >/dev/null
  for try in 1 2 3; do
    port=$(free_port) || return 1
    if as_server_user "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -o "-p $port" -w -t 60 start >/dev/null; then
      export PGHOST=$dir PGPORT=$port PGUSER=postgres PGDATABASE=postgres
      return 0
    fi
    grep -q 'could not bind' "$dir/server.log" || break
  done
  cat "$dir/server.log"
  return 1
}

cluster_stop() {
  local dir=$CLUSTER_ROOT/$1
  [ -d "$dir/data" ] && as_server_user "$PG_BIN/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  [ -z "${CLUSTER_LOG_DIR:-}" ] || [ ! -f "$dir/server.log" ] || cp "$dir/server.log" "$CLUSTER_LOG_DIR/$1.log"
  rm -rf "$dir"
}

cluster_cleanup_all() {
  local d
  for d in "$CLUSTER_ROOT"/*/; do [ -d "$d/data" ] && cluster_stop "$(basename "$d")"; done
  if [ -n "${CLUSTER_ROOT_MADE:-}" ]; then rm -rf "$CLUSTER_ROOT"; else rmdir "$CLUSTER_ROOT" 2>/dev/null || true; fi
}
