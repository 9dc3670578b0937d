#!/usr/bin/env bash
# Private nats-server processes with JetStream for idem's tests and benchmarks: loopback only,
# free ports, store directories in a fresh temporary folder. One node, or a cluster of three with
# routes between them (JetStream replicates R=3 streams and key-value buckets over Raft).
#
#   scripts/nats-fixture.sh start      STATE_DIR [NODES]  starts NODES (1 or 3; default 1) servers
#                                                  and returns once JetStream answers on every
#                                                  one; writes STATE_DIR/url (the client URLs,
#                                                  comma-separated: nats://127.0.0.1:P1,...),
#                                                  STATE_DIR/monitor (the HTTP monitoring URLs,
#                                                  one a line) and STATE_DIR/env
#   scripts/nats-fixture.sh stop       STATE_DIR  stops every node; removes the temporary folder
#   scripts/nats-fixture.sh kill-node  STATE_DIR I  SIGKILLs node I (1-based), keeping its data
#   scripts/nats-fixture.sh start-node STATE_DIR I  starts node I again (same ports and data)
#                                                  and waits until it answers
#   scripts/nats-fixture.sh pause-node STATE_DIR I  SIGSTOPs node I; resume-node sends SIGCONT
#   scripts/nats-fixture.sh pid        STATE_DIR I  prints node I's process id
#   scripts/nats-fixture.sh heal       STATE_DIR    resumes paused nodes, starts killed ones,
#                                                  and waits until every node answers
#
# Ports are drawn below the ephemeral range and claimed for the fixture's whole life, across
# kills and restarts (scripts/test-ports.sh): a stopped node's port is never handed to anyone else.
#
# Readiness is polled, never slept for: each node's /healthz?js-server-only=true (monitoring port)
# must answer 200, which nats-server does only once JetStream is up and, in a cluster, a meta
# leader is known. js-server-only: 2.10 would otherwise also wait for every stream and consumer to
# be current, and after a quorum loss it reported an ephemeral consumer that no longer existed
# ("consumer not found") for over a minute; 2.9 ignores the parameter.
# With IDEM_NATS_JETSTREAM=off, start runs servers without JetStream (for the tests of that
# error). Servers run with a max payload of 8 MiB (stored responses travel in one message), or
# IDEM_NATS_MAX_PAYLOAD (e.g. 64KB, for the relay's test of a message over it). On failure it
# prints why (the log's tail) and exits non-zero. Needs nats-server (Debian package
# 'nats-server', or IDEM_NATS_SERVER=/path) and curl; no terminal. IDEM_NATS_SYNC=always writes
# `sync_interval: always` into the jetstream block (every write fsynced before it is acknowledged;
# nats-server 2.10 and later; scripts/fetch-nats-server.sh gets one). IDEM_NATS_SERVER=fetched
# runs the one scripts/fetch-nats-server.sh keeps (fetching it if it is not there yet). The
# commands after `start` run the server `start` ran. `server` prints the path of the nats-server
# `start` would run.
set -euo pipefail

cmd=${1:-}
state=${2:-}
usage() {
  echo "usage: $0 start STATE_DIR [1|3] | stop STATE_DIR |" \
       "kill-node|start-node|pause-node|resume-node|pid STATE_DIR I | heal STATE_DIR | server" >&2
  exit 2
}
if [[ -z "$cmd" || (-z "$state" && "$cmd" != server) ]]; then usage; fi

server=${IDEM_NATS_SERVER:-$(command -v nats-server || true)}
if [[ -z "$server" && -x /usr/sbin/nats-server ]]; then server=/usr/sbin/nats-server; fi
if [[ "$server" == fetched ]]; then
  if ! server=$("$(dirname "${BASH_SOURCE[0]}")/fetch-nats-server.sh"); then
    echo "nats-fixture: IDEM_NATS_SERVER=fetched, and scripts/fetch-nats-server.sh failed (above)" >&2
    exit 1
  fi
fi
if [[ -z "$server" || ! -x "$server" ]]; then
  echo "nats-fixture: no nats-server found; install the Debian package 'nats-server'" \
       "(scripts/install-deps.sh) or set IDEM_NATS_SERVER" >&2
  exit 1
fi
ready_timeout=${IDEM_NATS_READY_TIMEOUT:-60}

log_tail() {
  local log=$1
  if [[ -f "$log" ]]; then
    echo "---- last lines of $log ----" >&2
    tail -n 30 "$log" >&2
  fi
}

# Ports: reserve_port and the holder of the claims (scripts/test-ports.sh).
# shellcheck source=scripts/test-ports.sh
source "$(dirname "${BASH_SOURCE[0]}")/test-ports.sh"

# write_config ROOT I NODES: node I's configuration (ports from the arrays client/route/http).
write_config() {
  local root=$1 i=$2 nodes=$3 dir=$1/n$2
  mkdir -p "$dir/store"
  {
    echo "server_name: idem-n$i"
    echo "listen: 127.0.0.1:${client[$i]}"
    echo "http: 127.0.0.1:${http[$i]}"
    echo "max_payload: ${IDEM_NATS_MAX_PAYLOAD:-8MB}"
    echo "pid_file: \"$dir/server.pid\""
    if [[ "${IDEM_NATS_JETSTREAM:-on}" != off ]]; then
      local sync=""
      if [[ -n "${IDEM_NATS_SYNC:-}" ]]; then sync=", sync_interval: ${IDEM_NATS_SYNC}"; fi
      echo "jetstream { store_dir: \"$dir/store\", max_memory_store: 256MB, max_file_store: 4GB$sync }"
    fi
    if ((nodes > 1)); then
      echo "cluster {"
      echo "  name: idem"
      echo "  listen: 127.0.0.1:${route[$i]}"
      echo "  routes: ["
      local j
      for ((j = 1; j <= nodes; j++)); do
        if ((j != i)); then echo "    nats-route://127.0.0.1:${route[$j]}"; fi
      done
      echo "  ]"
      echo "}"
    fi
  } >"$dir/nats.conf"
}

# launch DIR: starts the server of node folder DIR in the background, detached from our output.
launch() {
  local dir=$1
  rm -f "$dir/server.pid"
  setsid "$server" -c "$dir/nats.conf" </dev/null >>"$dir/server.log" 2>&1 &
  echo $! >"$dir/launched.pid"
}

# wait_ready DIR HTTP_PORT: polls /healthz until 200; fails when the process exits or time is up.
wait_ready() {
  local dir=$1 port=$2 pid deadline=$((SECONDS + ready_timeout))
  pid=$(cat "$dir/launched.pid")
  while ((SECONDS < deadline)); do
    if curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$port/healthz?js-server-only=true" \
      2>/dev/null; then
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then return 1; fi
    sleep 0.1
  done
  return 1
}

# wait_meta_leader HTTP_PORT: polls /jsz until the cluster's JetStream meta group has a leader.
# nats-server 2.15 answers /healthz?js-server-only=true before one is elected, and a client that
# asks JetStream anything in that window waits for its timeout (seen as the cluster tests' first
# store failing to open: "asking JetStream for the account: JetStream did not answer in time").
wait_meta_leader() {
  local port=$1 deadline=$((SECONDS + ready_timeout))
  while ((SECONDS < deadline)); do
    if curl -fsS --max-time 2 "http://127.0.0.1:$port/jsz" 2>/dev/null | grep -q '"leader"'; then
      return 0
    fi
    sleep 0.1
  done
  echo "nats-fixture: the cluster elected no JetStream meta leader in ${ready_timeout}s" >&2
  return 1
}

stop_pid() {
  local pid=$1 deadline=$((SECONDS + 30))
  kill -TERM "$pid" 2>/dev/null || return 0
  while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}

start() {
  local nodes=${1:-1}
  if [[ "$nodes" != 1 && "$nodes" != 3 ]]; then
    echo "nats-fixture: NODES must be 1 or 3, not '$nodes'" >&2
    exit 2
  fi
  mkdir -p "$state"
  rm -f "$state/url" "$state/monitor" "$state/env"
  local attempt root i ok
  for attempt in 1 2 3 4 5; do
    root=$(mktemp -d "${TMPDIR:-/tmp}/idem-nats.XXXXXX")
    client=() route=() http=()
    for ((i = 1; i <= nodes; i++)); do
      reserve_port; client[$i]=$reserved_port
      reserve_port; route[$i]=$reserved_port
      reserve_port; http[$i]=$reserved_port
    done
    for ((i = 1; i <= nodes; i++)); do write_config "$root" "$i" "$nodes"; done
    for ((i = 1; i <= nodes; i++)); do launch "$root/n$i"; done
    ok=1
    for ((i = 1; i <= nodes; i++)); do
      if ! wait_ready "$root/n$i" "${http[$i]}"; then ok=0; break; fi
    done
    if ((ok && nodes > 1)) && ! wait_meta_leader "${http[1]}"; then ok=0; fi
    if ((ok)); then
      local urls=() monitors=()
      for ((i = 1; i <= nodes; i++)); do
        urls+=("nats://127.0.0.1:${client[$i]}")
        monitors+=("http://127.0.0.1:${http[$i]}")
      done
      (IFS=,; echo "${urls[*]}") >"$state/url"
      printf '%s\n' "${monitors[@]}" >"$state/monitor"
      {
        echo "IDEM_NATS_ROOT=$root"
        echo "IDEM_NATS_NODES=$nodes"
        echo "IDEM_NATS_HTTP_PORTS=\"${http[*]}\""
        printf 'IDEM_NATS_STARTED_SERVER=%q\n' "$server"
      } >"$state/env"
      hold_reserved_ports "$root/ports.holder"
      echo "nats-fixture: $("$server" --version) x$nodes: $(cat "$state/url"), data in $root"
      return 0
    fi
    for ((i = 1; i <= nodes; i++)); do
      if [[ -f "$root/n$i/launched.pid" ]]; then stop_pid "$(cat "$root/n$i/launched.pid")"; fi
    done
    # A port taken between the check and the bind: try other ports. Anything else is fatal.
    release_unheld_ports
    if ! grep -qs "address already in use" "$root"/n*/server.log; then break; fi
    rm -rf "$root"
  done
  echo "nats-fixture: JetStream did not become ready in ${ready_timeout}s (attempt $attempt)" >&2
  for ((i = 1; i <= nodes; i++)); do log_tail "$root/n$i/server.log"; done
  rm -rf "$root"
  exit 1
}

load_state() {
  if [[ ! -f "$state/env" ]]; then
    echo "nats-fixture: $state/env is missing: was it started with '$0 start $state'?" >&2
    exit 1
  fi
  # shellcheck disable=SC1091
  source "$state/env"
  # A node started again runs the server the fixture started with, whatever this call's
  # environment names (a test's own commands do not carry the fixture's IDEM_NATS_SERVER).
  server=${IDEM_NATS_STARTED_SERVER:-$server}
}

node_dir() {
  local i=$1
  if [[ ! "$i" =~ ^[0-9]+$ ]] || ((i < 1 || i > IDEM_NATS_NODES)); then
    echo "nats-fixture: no node '$i' (nodes 1..$IDEM_NATS_NODES)" >&2
    exit 2
  fi
  echo "$IDEM_NATS_ROOT/n$i"
}

node_pid() { cat "$(node_dir "$1")/launched.pid"; }

start_node() {
  local i=$1 dir ports
  dir=$(node_dir "$i")
  read -r -a ports <<<"$IDEM_NATS_HTTP_PORTS"
  launch "$dir"
  if ! wait_ready "$dir" "${ports[$((i - 1))]}"; then
    echo "nats-fixture: node $i did not become ready again" >&2
    log_tail "$dir/server.log"
    exit 1
  fi
}

stop() {
  load_state
  local i pids=()
  for ((i = 1; i <= IDEM_NATS_NODES; i++)); do
    local dir=$IDEM_NATS_ROOT/n$i
    if [[ -f "$dir/launched.pid" ]]; then pids+=("$(cat "$dir/launched.pid")"); fi
  done
  # Every node is told at once, then waited for: one after another, each shut down while the
  # others still tried to reach it (5.4 s for three nodes, against 1.6 s at once).
  for i in "${pids[@]}"; do
    kill -CONT "$i" 2>/dev/null || true
    kill -TERM "$i" 2>/dev/null || true
  done
  for i in "${pids[@]}"; do stop_pid "$i"; done
  release_reserved_ports "$IDEM_NATS_ROOT/ports.holder"
  rm -rf "$IDEM_NATS_ROOT"
  rm -f "$state/url" "$state/monitor" "$state/env"
}

# alive PID: the process exists and is not a zombie (a killed server whose parent, the script
# that launched it, is gone waits for whoever reaps orphans here: in a container maybe nobody).
alive() {
  local pid=$1 stat
  stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [[ ${stat:0:1} != Z ]]
}

# heal: every node running and answering again: a paused node is resumed, a killed one started
# (a test that failed half-way through a fault leaves the cluster as it was then; the next test
# starts from a whole cluster instead of failing for the same reason). Every node is resumed or
# started first, and only then waited for: a lone survivor of a quorum loss answers /healthz only
# once the others are back (it has no meta leader), so waiting for it before starting them never
# ended (the storm's seeds 191079 and 20261203 on JetStream).
heal() {
  local i dir pid ports
  read -r -a ports <<<"$IDEM_NATS_HTTP_PORTS"
  for ((i = 1; i <= IDEM_NATS_NODES; i++)); do
    dir=$IDEM_NATS_ROOT/n$i
    pid=$(cat "$dir/launched.pid")
    kill -CONT "$pid" 2>/dev/null || true
    if ! alive "$pid"; then
      echo "nats-fixture: node $i was down: starting it" >&2
      launch "$dir"
    fi
  done
  for ((i = 1; i <= IDEM_NATS_NODES; i++)); do
    dir=$IDEM_NATS_ROOT/n$i
    if ! wait_ready "$dir" "${ports[$((i - 1))]}"; then
      echo "nats-fixture: node $i does not answer" >&2
      log_tail "$dir/server.log"
      exit 1
    fi
  done
}

case "$cmd" in
  start) start "${3:-1}" ;;
  stop) stop ;;
  kill-node) load_state; kill -KILL "$(node_pid "${3:-}")" ;;
  start-node) load_state; start_node "${3:-}" ;;
  pause-node) load_state; kill -STOP "$(node_pid "${3:-}")" ;;
  resume-node) load_state; kill -CONT "$(node_pid "${3:-}")" ;;
  pid) load_state; node_pid "${3:-}" ;;
  heal) load_state; heal ;;
  server) echo "$server" ;;
  *) usage ;;
esac
