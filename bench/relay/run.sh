#!/usr/bin/env bash
# bench/relay/run.sh: idem relay's throughput (messages/s) from PostgreSQL and from SQLite to
# NATS JetStream and to a local HTTP receiver (nginx answering 204), for several batch sizes, and
# the commit-to-delivery delay (p50/p99) on PostgreSQL with and without LISTEN/NOTIFY.
#
# Throughput: MESSAGES messages over AGGREGATES aggregates (PAYLOAD bytes each) are committed
# first, then `idem relay --once --batch B` publishes them all; messages/s = MESSAGES / its wall
# time (start-up included). Delay: the relay runs idle (--poll 1s; the first commit waits until
# its /metrics says it waits between passes), TRICKLE messages are committed one per transaction
# at RATE per second, and the delay of each is sent_ms - created_ms from the
# outbox (creation is in the transaction, just before its commit; sent_ms is when its batch was
# recorded, after the acknowledgement).
#
# Settings (environment): BUILD_DIR (build/release), NO_BUILD=1 (use the binaries as they are),
# MESSAGES (20000), AGGREGATES (1000), PAYLOAD (200), BATCHES ("10 100 1000"), TRICKLE (1000),
# RATE (100), SKIP (any of: postgres sqlite nats http latency). Needs nats-server, nginx
# (nginx-light), psql, python3 and PostgreSQL's server binaries (scripts/pg-fixture.sh).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"

messages=${MESSAGES:-20000}
aggregates=${AGGREGATES:-1000}
payload=${PAYLOAD:-200}
batches=${BATCHES:-10 100 1000}
trickle=${TRICKLE:-1000}
rate=${RATE:-100}
skip=" ${SKIP:-} "
build=${BUILD_DIR:-$root/build/release}
secret=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw

skipped() { [[ $skip == *" $1 "* ]]; }

if [[ ${NO_BUILD:-0} != 1 ]]; then
  cmake --preset release >/dev/null
  cmake --build --preset release -j2 --target idem relay_bench_tool >/dev/null
fi
idem_bin=$build/src/cli/idem
tool=$build/bench/relay/relay_bench_tool

for t in nats-server nginx psql python3; do
  command -v "$t" >/dev/null || { echo "missing: $t" >&2; exit 1; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/idem-relaybench.XXXXXX")
chmod 755 "$work"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [[ -f $work/pg/env ]]; then "$root/scripts/pg-fixture.sh" stop "$work/pg" >/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
now_ms() { date +%s%3N; }
# wait_idle PORT: returns once the relay whose --admin is on PORT waits between passes.
wait_idle() {
  python3 - "$1" <<'PY'
import sys, time, urllib.request
for _ in range(600):
    try:
        body = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=1).read()
        if b"\nidem_relay_waiting 1" in b"\n" + body:
            sys.exit(0)
    except OSError:
        pass
    time.sleep(0.05)
sys.exit("the relay did not become idle within 30 s")
PY
}

# ---- the servers
"$root/scripts/pg-fixture.sh" start "$work/pg" >/dev/null
pg_uri=$(cat "$work/pg/uri")
# fresh_pg: creates an empty database and prints its URI (called in $(...): no counter survives).
fresh_pg() {
  local name
  name=bench_$(date +%s%N)
  psql -q "$pg_uri" -c "CREATE DATABASE $name" >/dev/null
  echo "${pg_uri%/*}/$name"
}

nats_port=$(free_port)
nats-server -js -a 127.0.0.1 -p "$nats_port" -sd "$work/js" >"$work/nats.log" 2>&1 &
pids+=($!)
nats_url=nats://127.0.0.1:$nats_port

http_port=$(free_port)
mkdir -p "$work/nginx/logs"
chmod 777 "$work/nginx"
cat >"$work/nginx/nginx.conf" <<CONF
worker_processes 1;
pid $work/nginx/nginx.pid;
error_log $work/nginx/logs/error.log warn;
$([[ $(id -u) -eq 0 ]] && echo "user root;")
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $work/nginx/body;
  server {
    listen 127.0.0.1:$http_port;
    keepalive_requests 1000000;
    location / { return 204; }
  }
}
CONF
nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" -g 'daemon off;' 2>"$work/nginx/stderr" &
pids+=($!)
for _ in $(seq 100); do
  if python3 -c "import socket; socket.create_connection(('127.0.0.1',$nats_port)); socket.create_connection(('127.0.0.1',$http_port))" 2>/dev/null; then break; fi
  sleep 0.1
done

sink_args() {
  case $1 in
    nats) echo "--sink nats --url $nats_url --subject-prefix bench" ;;
    http) echo "--sink http --url http://127.0.0.1:$http_port/hooks --secret $secret" ;;
  esac
}

echo "relay benchmark: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src include || echo ' (dirty)')," \
  "build $build; $messages messages over $aggregates aggregates, $payload-byte payloads;" \
  "load average at start:$(uptime | sed 's/.*load average://')" >&2
echo
echo "| store | sink | batch | messages/s | seconds |"
echo "|---|---|---:|---:|---:|"
for store in postgres sqlite; do
  skipped "$store" && continue
  for sink in nats http; do
    skipped "$sink" && continue
    for batch in $batches; do
      if [[ $store == postgres ]]; then uri=$(fresh_pg); else
        rm -f "$work"/relay.db*
        uri="sqlite:$work/relay.db"
      fi
      "$tool" fill "$uri" "$messages" "$aggregates" "$payload"
      if [[ $sink == nats ]]; then "$tool" stream "$nats_url" BENCH 'bench.>'; fi
      start=$(now_ms)
      # shellcheck disable=SC2046
      "$idem_bin" relay --store "$uri" $(sink_args "$sink") --once --batch "$batch" 2>"$work/relay.log"
      end=$(now_ms)
      if [[ $sink == nats ]]; then
        got=$("$tool" stream-count "$nats_url" BENCH)
        [[ $got == "$messages" ]] || echo "  (the stream holds $got messages, not $messages)" >&2
      fi
      python3 -c "s=($end-$start)/1000; print(f'| $store | $sink | $batch | {$messages/s:,.0f} | {s:.2f} |')"
    done
  done
done

if ! skipped latency; then
  echo
  echo "| PostgreSQL → HTTP, $trickle commits at $rate/s | p50 ms | p99 ms | max ms |"
  echo "|---|---:|---:|---:|"
  for mode in listen poll; do
    uri=$(fresh_pg)
    "$tool" fill "$uri" 0 1 1  # migrates the fresh database
    extra=""
    [[ $mode == poll ]] && extra="--no-listen"
    admin_port=$(free_port)
    # shellcheck disable=SC2046
    "$idem_bin" relay --store "$uri" $(sink_args http) --poll 1s $extra \
      --admin "127.0.0.1:$admin_port" 2>"$work/relay-$mode.log" &
    relay_pid=$!
    pids+=($relay_pid)
    # The first commit waits until the relay is up and idle (its first pass done): a message
    # committed during the relay's start-up measures the start-up, not the wake.
    wait_idle "$admin_port"
    "$tool" trickle "$uri" "$trickle" "$rate"
    for _ in $(seq 100); do
      pending=$(psql -qtA "$uri" -c "SELECT count(*) FROM idem_outbox WHERE state = 'pending'")
      [[ $pending == 0 ]] && break
      sleep 0.1
    done
    kill -TERM "$relay_pid"
    wait "$relay_pid" || true
    read -r p50 p99 max n < <("$tool" latency "$uri")
    label="LISTEN/NOTIFY"
    [[ $mode == poll ]] && label="polling every 1 s (--no-listen)"
    echo "| $label | $p50 | $p99 | $max |"
  done
fi
