#!/usr/bin/env bash
# A throwaway PostgreSQL 15 for tests and benchmarks (issue #15): its own data directory, a free
# port on 127.0.0.1, password authentication over TCP, fsync off. Never touches a system cluster.
#   scripts/throwaway-postgres.sh start [DIR]   initdb (once) + start; prints the URL (also in DIR/url)
#   scripts/throwaway-postgres.sh stop  [DIR]   stops it (pg_ctl, then the postmaster's PID)
#   scripts/throwaway-postgres.sh url   [DIR]   prints the URL of the running server
# DIR defaults to .build/pg. As root, the server runs as the `postgres` user (PostgreSQL refuses root).
set -euo pipefail
cmd=${1:?usage: $0 start|stop|url [DIR]}
dir=$(realpath -m "${2:-.build/pg}")
bin=${PG_BIN:-/usr/lib/postgresql/15/bin}
data=$dir/data
run() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

case "$cmd" in
start)
  [ -x "$bin/postgres" ] || { echo "error: PostgreSQL 15 not found in $bin (run scripts/install-system-deps.sh test)" >&2; exit 1; }
  mkdir -p "$dir"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$dir"
  if [ -f "$data/postmaster.pid" ] && run "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
    cat "$dir/url"; exit 0
  fi
  if [ ! -f "$data/PG_VERSION" ]; then
    run "$bin/initdb" -D "$data" -U postgres -E UTF8 --no-sync --auth-local=trust --auth-host=scram-sha-256 >"$dir/initdb.log" 2>&1 \
      || { cat "$dir/initdb.log" >&2; exit 1; }
  fi
  # The port of the previous start when it is still free (a restart keeps the URL), else a free one.
  port=$(python3 - "$dir/port" <<'PY'
import pathlib, socket, sys
def free(p):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try: s.bind(("127.0.0.1", p)); return s.getsockname()[1]
    except OSError: return None
    finally: s.close()
f = pathlib.Path(sys.argv[1])
old = int(f.read_text()) if f.exists() and f.read_text().strip().isdigit() else None
print((old and free(old)) or free(0))
PY
)
  run "$bin/pg_ctl" -D "$data" -l "$dir/server.log" -w -t 30 \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" start >/dev/null \
    || { tail -20 "$dir/server.log" >&2; exit 1; }
  psql() { run "$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$dir" -p "$port" -U postgres "$@"; }
  psql -d postgres -c "DO \$\$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'dcserve') THEN
      CREATE ROLE dcserve LOGIN CREATEDB PASSWORD 'dcserve-test'; END IF; END \$\$;"
  psql -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'dcserve_test'" | grep -q 1 \
    || psql -d postgres -c "CREATE DATABASE dcserve_test OWNER dcserve"
  echo "$port" >"$dir/port"
  echo "postgres://dcserve:dcserve-test@127.0.0.1:$port/dcserve_test?sslmode=disable" >"$dir/url"
  cat "$dir/url"
  ;;
stop)
  [ -f "$data/postmaster.pid" ] || exit 0
  if ! run "$bin/pg_ctl" -D "$data" -m fast -w -t 20 stop >/dev/null 2>&1; then
    pid=$(head -1 "$data/postmaster.pid" 2>/dev/null || true)
    [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null || true
  fi
  ;;
url)
  cat "$dir/url"
  ;;
*) echo "usage: $0 start|stop|url [DIR]" >&2; exit 2 ;;
esac
