#!/usr/bin/env bash
# The gateway benchmark (issue 8): one run, one upstream (examples/charges, release build), and in
# turn in front of it:
#   nginx          nginx proxy_pass with a keep-alive upstream (one hop: the limit for any gateway)
#   idem-unique    idem serve, SQLite (synchronous=FULL), a fresh store, a new key per request
#   idem-replay    idem serve, the same store, 100 keys stored beforehand: every request replays
#   idem-proxy     idem serve, the same, requests without a key: streamed through unguarded (what
#                  idem costs as a plain proxy: the floor under every guarded row)
#   idem-pg-*      the same two on a private PostgreSQL server (scripts/pg-fixture.sh)
#   nodeidem-*     Express + @node-idempotency/core + its Redis adapter, proxying to charges
#   expressidem-*  Express + express-idempotency + express-idempotency-redis-adapter, proxying
# Load: wrk -t2 -c64 -d10s -s post.lua (POST /charges, a JSON body, an Idempotency-Key).
# Then the RSS of idem serve with 10k open keep-alive connections (and once they closed: its
# open-connection gauge and file descriptors) and after 1M stored keys (with the replay cache's
# bytes, bounded by --cache-bytes, 64 MiB by default).
# The "CPU µs/req" column is the CPU time (user + system) the row's gateway spent per request during
# its wrk run: nginx's master and workers, idem serve, or the Node process with its Redis server;
# "upstream µs" and "wrk µs" are those of examples/charges and of wrk in the same run. With all
# three sharing the cores, their sum says what each row's rate can be at most (2 cores: 2,000,000
# µs per second divided by the sum).
#
# The idem-proxy and idem-unique rows run ROUNDS times in turn (idem-proxy-2, idem-unique-2, ...):
# on a shared machine one row's CPU per request moves 10-20% between runs, so the unique ÷ proxy
# CPU ratio (issue 24: at most 2) is printed per round and as the median of the rounds.
#
# Environment: DURATION (10s), CONNECTIONS (64), THREADS (2), IDLE_CONNS (10000), ROUNDS (3),
# FILL_KEYS (1000000; 0 skips), FILL_SECONDS (30: unique keys sent through idem serve before the
# rest of FILL_KEYS is copied into the store in SQL), SKIP (space-separated row names or groups to skip: nginx idem pg
# node rss), NO_BUILD=1 (use the binaries as they are), BUILD_DIR (build/release). Needs wrk, nginx (nginx-light), redis-server,
# node, npm and PostgreSQL's server binaries (bench/gateway/deps.txt); the Node packages are
# installed from npm into ${XDG_CACHE_HOME:-~/.cache}/idem-bench-node (versions in node/package.json).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"

duration=${DURATION:-10s}
connections=${CONNECTIONS:-64}
threads=${THREADS:-2}
idle_conns=${IDLE_CONNS:-10000}
fill_keys=${FILL_KEYS:-1000000}
fill_seconds=${FILL_SECONDS:-30}
rounds=${ROUNDS:-3}
skip=" ${SKIP:-} "
build=${BUILD_DIR:-$root/build/release}
body='{"amount": 4200, "currency": "eur"}'

skipped() { [[ $skip == *" $1 "* ]]; }

if [[ ${NO_BUILD:-0} != 1 ]]; then
  cmake --preset release >/dev/null
  cmake --build --preset release -j2 --target idem charges >/dev/null
fi
idem_bin=$build/src/cli/idem
charges_bin=$build/examples/charges/charges

missing=()
for tool in wrk nginx redis-server node npm python3 curl sqlite3; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
if ((${#missing[@]})); then
  echo "missing: ${missing[*]}; install the Debian packages in bench/gateway/deps.txt" >&2
  exit 1
fi

ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
work=$(mktemp -d "${TMPDIR:-/tmp}/idem-gwbench.XXXXXX")
chmod 755 "$work"
pids=()
pg_state=""
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [[ -n $pg_state && -f $pg_state/env ]]; then "$root/scripts/pg-fixture.sh" stop "$pg_state" || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
# wait_http URL: waits (at most 20 s) until URL answers.
wait_http() {
  for _ in $(seq 200); do
    if curl -s -o /dev/null "$1"; then return 0; fi
    sleep 0.1
  done
  echo "no answer from $1" >&2
  return 1
}
# stop_pid PID: SIGTERM and wait.
stop_pid() {
  kill -TERM "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}
rss_kib() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
# metric NAME: the value of an unlabelled metric of the idem serve last started.
metric() { curl -s "$idem_admin/metrics" | awk -v name="$1" '$1 == name {print $2}'; }
# cpu_ticks PID...: the CPU time (user + system, in clock ticks) the processes have used so far.
cpu_ticks() {
  local total=0 pid
  for pid in "$@"; do
    # Fields after "(comm)": utime and stime are the 12th and 13th.
    [[ -r /proc/$pid/stat ]] && total=$((total + $(sed 's/.*) //' "/proc/$pid/stat" | awk '{print $12 + $13}')))
  done
  echo "$total"
}
ticks_per_second=$(getconf CLK_TCK)
gateway_pids=""  # the processes measure charges CPU time to (set before each measure)

results=$work/results
: >"$results"
# timed_wrk ARGS...: runs wrk, prints its output and then "WRKCPU <seconds of CPU it used>".
timed_wrk() {
  python3 -c 'import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
used = resource.getrusage(resource.RUSAGE_CHILDREN)
print(done.stdout, end="")
print("WRKCPU %.6f" % (used.ru_utime + used.ru_stime))
sys.exit(done.returncode)' wrk "$@"
}
# measure NAME URL MODE...: one wrk run; appends "NAME rps p50 p99 requests non2xx errors cpu_us
# upstream_us wrk_us" (CPU µs per request of $gateway_pids, of charges and of wrk).
measure() {
  local name=$1 url=$2
  shift 2
  local out before after upstream_before upstream_after
  # shellcheck disable=SC2086 # a list of pids
  before=$(cpu_ticks $gateway_pids)
  upstream_before=$(cpu_ticks "$charges_pid")
  out=$(timed_wrk -t"$threads" -c"$connections" -d"$duration" -s "$here/post.lua" "$url" -- "$@" 2>&1)
  # shellcheck disable=SC2086
  after=$(cpu_ticks $gateway_pids)
  upstream_after=$(cpu_ticks "$charges_pid")
  local line
  line=$(grep '^RESULT' <<<"$out" || true)
  if [[ -z $line ]]; then
    echo "$name: wrk failed:" >&2
    echo "$out" >&2
    return 1
  fi
  local requests cpu_us upstream_us wrk_us per
  read -r _ _ _ _ requests _ <<<"$line"
  per=$((requests > 0 ? requests : 1))
  cpu_us=$(((after - before) * 1000000 / ticks_per_second / per))
  upstream_us=$(((upstream_after - upstream_before) * 1000000 / ticks_per_second / per))
  wrk_us=$(awk -v s="$(awk '$1 == "WRKCPU" {print $2}' <<<"$out")" -v n="$per" 'BEGIN {printf "%d", s * 1000000 / n}')
  echo "$name ${line#RESULT } $cpu_us $upstream_us $wrk_us" >>"$results"
  echo "  $name: ${line#RESULT } cpu_us=$cpu_us upstream_us=$upstream_us wrk_us=$wrk_us" >&2
}
# store_replay_keys URL: stores keys replay-0..99 (one POST each) so the replay run only replays.
store_replay_keys() {
  for i in $(seq 0 99); do
    curl -s -o /dev/null -X POST "$1/charges" -H "Idempotency-Key: replay-$i" \
      -H 'Content-Type: application/json' -d "$body"
  done
}

echo "gateway benchmark: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src include || echo ' (dirty)')," \
  "wrk -t$threads -c$connections -d$duration; load average at start:$(uptime | sed 's/.*load average://')" >&2

charges_port=$(free_port)
"$charges_bin" --listen "127.0.0.1:$charges_port" 2>"$work/charges.log" &
charges_pid=$!
pids+=($charges_pid)
wait_http "http://127.0.0.1:$charges_port/stats"
upstream=http://127.0.0.1:$charges_port

# ---- nginx proxy_pass
if ! skipped nginx; then
  nginx_port=$(free_port)
  mkdir -p "$work/nginx/logs"
  chmod 777 "$work/nginx"
  cat >"$work/nginx/nginx.conf" <<EOF
worker_processes auto;
pid $work/nginx/nginx.pid;
error_log $work/nginx/logs/error.log warn;
$([[ $(id -u) -eq 0 ]] && echo "user root;")
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $work/nginx/body;
  proxy_temp_path $work/nginx/proxy;
  upstream charges { server 127.0.0.1:$charges_port; keepalive 64; }
  server {
    listen 127.0.0.1:$nginx_port;
    keepalive_requests 1000000;
    location / {
      proxy_pass http://charges;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
EOF
  nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" -g 'daemon off;' 2>"$work/nginx/stderr" &
  nginx_pid=$!
  pids+=($nginx_pid)
  wait_http "http://127.0.0.1:$nginx_port/stats"
  gateway_pids="$nginx_pid $(pgrep -P "$nginx_pid" | tr '\n' ' ')"
  measure nginx "http://127.0.0.1:$nginx_port" none
  stop_pid "$nginx_pid"
fi

# start_idem STORE_URI [FLAGS...]: starts idem serve; sets idem_pid, idem_url.
start_idem() {
  local store=$1
  shift
  local port admin
  port=$(free_port)
  admin=$(free_port)
  "$idem_bin" serve --listen "127.0.0.1:$port" --upstream "$upstream" --store "$store" \
    --admin "127.0.0.1:$admin" "$@" 2>>"$work/idem.log" &
  idem_pid=$!
  pids+=($idem_pid)
  gateway_pids=$idem_pid
  idem_url=http://127.0.0.1:$port
  idem_admin=http://127.0.0.1:$admin
  for _ in $(seq 200); do
    if curl -sf "http://127.0.0.1:$admin/readyz" >/dev/null 2>&1; then return 0; fi
    if ! kill -0 "$idem_pid" 2>/dev/null; then break; fi
    sleep 0.1
  done
  echo "idem serve did not become ready:" >&2
  tail -n 20 "$work/idem.log" >&2
  return 1
}

# ---- idem serve on SQLite (FULL, the default), a fresh store
if ! skipped idem; then
  start_idem "sqlite:$work/idem.db"
  store_replay_keys "$idem_url"
  measure idem-replay "$idem_url" replay 100
  for round in $(seq "$rounds"); do
    suffix=$([[ $round == 1 ]] || echo "-$round")
    measure "idem-proxy$suffix" "$idem_url" none
    measure "idem-unique$suffix" "$idem_url" unique
  done
  stop_pid "$idem_pid"
fi

# ---- idem serve on PostgreSQL (a private server, stopped afterwards)
if ! skipped pg; then
  pg_state=$work/pg
  "$root/scripts/pg-fixture.sh" start "$pg_state" >&2
  start_idem "$(cat "$pg_state/uri")"
  # Replays first: after tens of thousands of unique inserts the server's own background work
  # (autovacuum, checkpoints) shares the two cores and would be charged to the replay row.
  store_replay_keys "$idem_url"
  measure idem-pg-replay "$idem_url" replay 100
  measure idem-pg-unique "$idem_url" unique
  stop_pid "$idem_pid"
  "$root/scripts/pg-fixture.sh" stop "$pg_state" >&2
  pg_state=""
fi

# ---- the Node peers, each with its own fresh Redis
if ! skipped node; then
  node_dir=${XDG_CACHE_HOME:-$HOME/.cache}/idem-bench-node
  mkdir -p "$node_dir"
  if ! cmp -s "$here/node/package.json" "$node_dir/package.json" || [[ ! -d $node_dir/node_modules ]]; then
    cp "$here/node/package.json" "$node_dir/package.json"
    (cd "$node_dir" && npm install --no-audit --no-fund --loglevel=error >&2)
  fi
  for peer in node-idempotency express-idempotency; do
    redis_port=$(free_port)
    mkdir -p "$work/redis-$peer"
    redis-server --port "$redis_port" --bind 127.0.0.1 --dir "$work/redis-$peer" \
      >"$work/redis-$peer/log" 2>&1 &
    redis_pid=$!
    pids+=($redis_pid)
    peer_port=$(free_port)
    NODE_PATH=$node_dir/node_modules node "$here/node/peers.js" "$peer" "$peer_port" \
      "$charges_port" "$redis_port" 2>"$work/$peer.log" &
    peer_pid=$!
    pids+=($peer_pid)
    gateway_pids="$peer_pid $redis_pid"
    wait_http "http://127.0.0.1:$peer_port/"
    short=${peer%%-*}
    [[ $short == node ]] && short=nodeidem || short=expressidem
    measure "$short-unique" "http://127.0.0.1:$peer_port" unique
    store_replay_keys "http://127.0.0.1:$peer_port"
    measure "$short-replay" "http://127.0.0.1:$peer_port" replay 100
    stop_pid "$peer_pid"
    stop_pid "$redis_pid"
  done
fi

# ---- memory: idem serve with 10k open connections, then after FILL_KEYS stored keys
memory=""
if ! skipped rss; then
  printf 'max_connections = %d\n' $((idle_conns + 1000)) >"$work/rss.toml"
  start_idem "sqlite:$work/rss.db" --config "$work/rss.toml"
  store_replay_keys "$idem_url"
  rss_start=$(rss_kib "$idem_pid")
  coproc IDLE { python3 "$here/idle_conns.py" 127.0.0.1 "${idem_url##*:}" "$idle_conns" replay-0; }
  read -r ready_line <&"${IDLE[0]}"
  rss_idle=$(rss_kib "$idem_pid")
  echo "  idle connections: $ready_line" >&2
  kill -TERM "$IDLE_PID" 2>/dev/null || true
  wait "$IDLE_PID" 2>/dev/null || true
  # Every connection the clients closed must be closed by the gateway too (its gauge and its
  # file descriptors); freed memory stays with the allocator for reuse (allocator_tuning.cc).
  for _ in $(seq 100); do
    [[ $(metric idem_open_connections) == 0 ]] && break
    sleep 0.1
  done
  rss_closed=$(rss_kib "$idem_pid")
  memory+="idem serve RSS: $((rss_start / 1024)) MiB at start, $((rss_idle / 1024)) MiB with"
  memory+=" $idle_conns open connections (${ready_line}); after they closed: $((rss_closed / 1024)) MiB,"
  memory+=" $(metric idem_open_connections) connections open, $(ls "/proc/$idem_pid/fd" | wc -l) file descriptors"
  if ((fill_keys > 0)); then
    # Unique keys through the gateway for FILL_SECONDS, then (as unique-key throughput on one
    # SQLite file is far below 1M in a benchmark's time) the rest copied in SQL from a stored
    # record, all with the replay body; then every stored key is replayed once through the
    # gateway and its RSS read.
    out=$(wrk -t"$threads" -c"$connections" -d"${fill_seconds}s" -s "$here/post.lua" "$idem_url" -- unique 2>&1)
    read -r _ _ _ _ n non2xx _ <<<"$(grep '^RESULT' <<<"$out")"
    through_gateway=$((n - non2xx))
    rss_unique=$(rss_kib "$idem_pid")
    cache_unique=$(metric idem_replay_cache_bytes)
    stop_pid "$idem_pid"
    sqlite3 "$work/rss.db" "WITH RECURSIVE n(i) AS (SELECT 100 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < $fill_keys)
      INSERT OR IGNORE INTO idem_keys (tenant, key, fingerprint, state, fence, owner, lease_until,
        status, headers, body, created, updated, expires)
      SELECT tenant, 'replay-' || i, fingerprint, state, fence, owner, lease_until, status, headers,
        body, created, updated, expires
      FROM idem_keys, n WHERE tenant = '' AND key = 'replay-0'"
    stored=$(sqlite3 "$work/rss.db" "SELECT count(*) FROM idem_keys")
    start_idem "sqlite:$work/rss.db" --config "$work/rss.toml"
    out=$(wrk -t1 -c"$connections" -d"$duration" -s "$here/post.lua" "$idem_url" -- replay "$fill_keys" 2>&1)
    read -r _ rps _ _ n non2xx _ <<<"$(grep '^RESULT' <<<"$out")"
    rss_fill=$(rss_kib "$idem_pid")
    cache_fill=$(metric idem_replay_cache_bytes)
    memory+=$'\n'"idem serve RSS after $through_gateway unique keys through it in ${fill_seconds}s: $((rss_unique / 1024)) MiB (replay cache $((cache_unique / 1048576)) MiB)"
    memory+=$'\n'"idem serve RSS with $stored stored keys (SQLite file $(($(stat -c %s "$work/rss.db") / 1048576)) MiB), restarted, after replaying $n of them ($rps req/s, $non2xx non-2xx): $((rss_fill / 1024)) MiB (replay cache $((cache_fill / 1048576)) MiB)"
  fi
  stop_pid "$idem_pid"
fi

# ---- the table
echo
echo "gateway benchmark, commit $(git rev-parse --short HEAD), wrk -t$threads -c$connections -d$duration," \
  "POST /charges (JSON body) to examples/charges; load average at end:$(uptime | sed 's/.*load average://')"
echo
awk -v body="" '
  NR == FNR && $1 == "nginx" { nrps = $2; np99 = $4 }
  NR == FNR { next }
  FNR == 1 {
    printf "| %-18s | %8s | %8s | %8s | %9s | %9s | %7s | %6s | %12s | %11s | %6s |\n", "row", "req/s", "p50 ms", "p99 ms", "× nginx", "p99 × ng", "non-2xx", "errors", "CPU µs/req", "upstream µs", "wrk µs"
    printf "|%s|%s:|%s:|%s:|%s:|%s:|%s:|%s:|%s:|%s:|%s:|\n", "--------------------", "---------", "---------", "---------", "----------", "----------", "--------", "-------", "-------------", "------------", "-------"
  }
  {
    r = nrps ? sprintf("%.2f", $2 / nrps) : "-"
    p = np99 ? sprintf("%.2f", $4 / np99) : "-"
    printf "| %-18s | %8d | %8.2f | %8.2f | %9s | %9s | %7d | %6d | %12d | %11d | %6d |\n", $1, $2, $3 / 1000, $4 / 1000, r, p, $6, $7, $8, $9, $10
  }' "$results" "$results"
# The unique ÷ proxy CPU per request of each round, and their median.
awk '
  $1 ~ /^idem-proxy(-[0-9]+)?$/ { n = $1; sub(/^idem-proxy/, "", n); proxy[n] = $8 }
  $1 ~ /^idem-unique(-[0-9]+)?$/ { n = $1; sub(/^idem-unique/, "", n); unique[n] = $8; order[++count] = n }
  END {
    for (i = 1; i <= count; i++) {
      n = order[i]
      if (proxy[n] > 0) { ratio[++k] = unique[n] / proxy[n]; line = line sprintf(" %.2f", ratio[k]) }
    }
    if (k == 0) exit
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (ratio[j] < ratio[i]) { t = ratio[i]; ratio[i] = ratio[j]; ratio[j] = t }
    median = k % 2 ? ratio[(k + 1) / 2] : (ratio[k / 2] + ratio[k / 2 + 1]) / 2
    printf "\nidem-unique ÷ idem-proxy CPU per request, per round:%s; median %.2f\n", line, median
  }' "$results"
if [[ -n $memory ]]; then
  echo
  echo "$memory"
fi
