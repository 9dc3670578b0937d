#!/usr/bin/env bash
# A private PostgreSQL 15 server for idem's tests and benchmarks: loopback only, a free port, a
# data directory in a fresh temporary folder, fsync and synchronous_commit on.
#
#   scripts/pg-fixture.sh start   STATE_DIR   starts it; writes STATE_DIR/uri (the connection
#                                             URI of the superuser "postgres") and STATE_DIR/env
#   scripts/pg-fixture.sh restart STATE_DIR   pg_ctl restart -m fast (same port and data)
#   scripts/pg-fixture.sh pause   STATE_DIR   pg_ctl stop -m fast, keeping the data (a "store down")
#   scripts/pg-fixture.sh crash   STATE_DIR   pg_ctl stop -m immediate, keeping the data: the
#                                             server goes as by a power cut (resume starts it
#                                             again, through crash recovery)
#   scripts/pg-fixture.sh resume  STATE_DIR   starts a paused or crashed server again (same port
#                                             and data)
#   scripts/pg-fixture.sh stop    STATE_DIR   pg_ctl stop -m immediate; removes the temporary
#                                             folder
#
# initdb and postgres refuse to run as root: as root the server runs as the "postgres" user (with
# runuser), otherwise as the calling user. On failure it prints why (the server log's tail) and
# exits non-zero. Needs no terminal (CI=true, no stdin).
set -euo pipefail

cmd=${1:-}
state=${2:-}
if [[ -z "$cmd" || -z "$state" ]]; then
  echo "usage: $0 start|restart|pause|crash|resume|stop STATE_DIR" >&2
  exit 2
fi

pg_bin=${IDEM_PG_BIN:-}
if [[ -z "$pg_bin" ]]; then
  for v in 15 16 17 14 13; do
    if [[ -x /usr/lib/postgresql/$v/bin/postgres ]]; then pg_bin=/usr/lib/postgresql/$v/bin; break; fi
  done
fi
if [[ -z "$pg_bin" || ! -x "$pg_bin/initdb" ]]; then
  echo "pg-fixture: no PostgreSQL server binaries found (${IDEM_PG_BIN:-/usr/lib/postgresql/*/bin});" \
       "install the Debian package 'postgresql' (scripts/install-deps.sh) or set IDEM_PG_BIN" >&2
  exit 1
fi

# as_server CMD...: runs CMD as the user that owns the server.
as_server() {
  if [[ $(id -u) -eq 0 ]]; then
    runuser -u postgres -- "$@" </dev/null
  else
    "$@" </dev/null
  fi
}

# own FILE: gives a file written here to the server's user.
own() {
  if [[ $(id -u) -eq 0 ]]; then chown postgres: "$1"; fi
}

# The port: drawn below the ephemeral range and claimed for the server's whole life, across
# restarts and pauses (scripts/test-ports.sh), so a paused server's port stays its own.
# shellcheck source=scripts/test-ports.sh
source "$(dirname "${BASH_SOURCE[0]}")/test-ports.sh"

log_tail() {
  local log=$1
  if [[ -f "$log" ]]; then
    echo "---- last lines of $log ----" >&2
    tail -n 30 "$log" >&2
  fi
}

start() {
  mkdir -p "$state"
  rm -f "$state/uri" "$state/env"
  local root
  root=$(mktemp -d "${TMPDIR:-/tmp}/idem-pg.XXXXXX")
  chmod 700 "$root"
  if [[ $(id -u) -eq 0 ]]; then chown postgres: "$root"; fi
  local data=$root/data log=$root/server.log
  # --no-sync: the new cluster's files are not flushed to disk one by one before the server
  # starts (4.8-5.9 s against 1.7-2.1 s); the server itself runs with fsync on, and a test's
  # crash (pg_ctl stop -m immediate) keeps the operating system's page cache.
  if ! as_server "$pg_bin/initdb" -D "$data" -U postgres -A trust -E UTF8 --locale=C --no-sync \
      >"$root/initdb.log" 2>&1; then
    echo "pg-fixture: initdb failed" >&2
    log_tail "$root/initdb.log"
    rm -rf "$root"
    exit 1
  fi
  # A role that must give a password (scram), for the bad-credentials tests; every other role is
  # trusted on loopback.
  cat >"$data/pg_hba.conf" <<'EOF'
local all all              trust
host  all idem_password 127.0.0.1/32 scram-sha-256
host  all all           127.0.0.1/32 trust
EOF
  own "$data/pg_hba.conf"
  local port attempt
  for attempt in 1 2 3 4 5 6 7 8; do
    release_unheld_ports
    reserve_port
    port=$reserved_port
    cat >"$data/postgresql.auto.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$root'
fsync = on
synchronous_commit = on
max_connections = 300
shared_buffers = 128MB
max_locks_per_transaction = 256
log_min_messages = warning
password_encryption = 'scram-sha-256'
EOF
    own "$data/postgresql.auto.conf"
    if as_server "$pg_bin/pg_ctl" -D "$data" -l "$log" -w -t 60 start >/dev/null 2>&1; then
      as_server "$pg_bin/psql" -X -q -h 127.0.0.1 -p "$port" -U postgres -d postgres \
        -c "CREATE ROLE idem_password LOGIN PASSWORD 'right-password'" >/dev/null
      printf 'postgresql://postgres@127.0.0.1:%s/postgres\n' "$port" >"$state/uri"
      cat >"$state/env" <<EOF
IDEM_PG_ROOT=$root
IDEM_PG_DATA=$data
IDEM_PG_BIN=$pg_bin
IDEM_PG_PORT=$port
EOF
      hold_reserved_ports "$root/port.holder"
      echo "pg-fixture: PostgreSQL ($("$pg_bin/postgres" --version)) on 127.0.0.1:$port, data in $data"
      return 0
    fi
    # Most likely the port was taken between the check and the bind: try another.
    if ! grep -q "could not bind\|Address already in use" "$log" 2>/dev/null; then break; fi
  done
  echo "pg-fixture: the server did not start (attempt $attempt, port $port)" >&2
  log_tail "$log"
  rm -rf "$root"
  exit 1
}

load_state() {
  if [[ ! -f "$state/env" ]]; then
    echo "pg-fixture: $state/env is missing: was the server started with '$0 start $state'?" >&2
    exit 1
  fi
  # shellcheck disable=SC1091
  source "$state/env"
}

restart() {
  load_state
  if ! as_server "$IDEM_PG_BIN/pg_ctl" -D "$IDEM_PG_DATA" -l "$IDEM_PG_ROOT/server.log" -w -t 60 \
      -m fast restart >/dev/null 2>&1; then
    echo "pg-fixture: restart failed" >&2
    log_tail "$IDEM_PG_ROOT/server.log"
    exit 1
  fi
}

pause() {
  load_state
  if ! as_server "$IDEM_PG_BIN/pg_ctl" -D "$IDEM_PG_DATA" -w -t 60 -m fast stop >/dev/null 2>&1; then
    echo "pg-fixture: pause (stop) failed" >&2
    log_tail "$IDEM_PG_ROOT/server.log"
    exit 1
  fi
}

crash() {
  load_state
  if ! as_server "$IDEM_PG_BIN/pg_ctl" -D "$IDEM_PG_DATA" -w -t 60 -m immediate stop \
      >/dev/null 2>&1; then
    echo "pg-fixture: crash (immediate stop) failed" >&2
    log_tail "$IDEM_PG_ROOT/server.log"
    exit 1
  fi
}

resume() {
  load_state
  if ! as_server "$IDEM_PG_BIN/pg_ctl" -D "$IDEM_PG_DATA" -l "$IDEM_PG_ROOT/server.log" -w -t 60 \
      start >/dev/null 2>&1; then
    echo "pg-fixture: resume (start) failed" >&2
    log_tail "$IDEM_PG_ROOT/server.log"
    exit 1
  fi
}

stop() {
  load_state
  local rc=0
  if [[ -f "$IDEM_PG_DATA/postmaster.pid" ]]; then
    # Immediate: the data is removed next, so a shutdown checkpoint (every dirty buffer written
    # and fsynced: 12 s against 1.4 s for 400 test schemas, 27 s at the end of the suite's
    # PostgreSQL tests) would be wasted.
    as_server "$IDEM_PG_BIN/pg_ctl" -D "$IDEM_PG_DATA" -w -t 60 -m immediate stop \
      >/dev/null 2>&1 || {
      echo "pg-fixture: stop failed" >&2
      log_tail "$IDEM_PG_ROOT/server.log"
      rc=1
    }
  fi
  release_reserved_ports "$IDEM_PG_ROOT/port.holder"
  rm -rf "$IDEM_PG_ROOT"
  rm -f "$state/uri" "$state/env"
  exit $rc
}

case "$cmd" in
  start) start ;;
  restart) restart ;;
  pause) pause ;;
  crash) crash ;;
  resume) resume ;;
  stop) stop ;;
  *) echo "usage: $0 start|restart|pause|crash|resume|stop STATE_DIR" >&2; exit 2 ;;
esac
