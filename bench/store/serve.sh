#!/usr/bin/env bash
# idem serve's unique-key throughput on each store (bench/RESULTS.md, "Key store on JetStream"):
# the gateway benchmark's load (wrk -t2 -c64, POST /charges with bench/gateway/post.lua's JSON body
# and a new Idempotency-Key per request: bench/store/unique.lua) to examples/charges, through one
# idem serve on
#   sqlite       SQLite, synchronous=FULL (the default), a fresh file under the build folder
#   postgres     a private PostgreSQL server (scripts/pg-fixture.sh: fsync, synchronous_commit on)
#   postgres-2gw two idem serve processes on that server's database, each loaded by its own wrk
#                -t1 with half the connections at the same time; req/s is their sum
#   nats-1       a three-node JetStream cluster (scripts/nats-fixture.sh), R=3, 1 shard
#   nats-4       the same cluster, R=3, 4 shards
#   nats-2gw     two idem serve processes on one bucket (R=3, 1 shard), each loaded by its own
#                wrk -t1 with half the connections at the same time; req/s is their sum
# One line per row: "| row | req/s | p50 ms | p99 ms | requests | non-2xx | errors | idem µs/req |
# store µs/req |": the last two are the CPU time (user + system) per request that the row's idem
# serve process(es) and its store's server processes (the PostgreSQL server and its backends, the
# three nats-server nodes; none for SQLite, which runs inside idem) spent during the wrk run.
# After the table, one line per row with its writes per group commit (the gateways' metric
# idem_store_batch_size) and the share of the machine's CPU time left idle during the wrk run.
# After the table, one line per JetStream row with counts that do not depend on the load, per
# request: the stream writes (the growth of the row's buckets' last sequences: claims, outcomes,
# markers), the JetStream API calls (/jsz api.total: reads, stream info), the messages the three
# servers took in (/varz in_msgs: clients' publishes, forwarded publishes and acknowledgements, Raft
# appends and answers), how many of idem's connections are on a bucket's stream leader and what
# share of the messages idem sent (its publishes and requests, /connz in_msgs) those received (a
# publish entering by a follower is forwarded, with its acknowledgement, between two servers); then each
# nats-server's CPU per request, with the buckets it leads and the idem connections it holds.
#
#   bench/store/serve.sh [BUILD_DIR]     default build/release (cmake --preset release; targets
#                                        idem charges)
# Environment: DURATION (10s), CONNECTIONS (64), THREADS (2), ROWS (all of the above, by name),
# IDEM_SERVE_ARGS (more flags for every idem serve, e.g. "--store-writers 2"; none).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build/release}
duration=${DURATION:-10s}
connections=${CONNECTIONS:-64}
threads=${THREADS:-2}
rows=" ${ROWS:-sqlite postgres postgres-2gw nats-1 nats-4 nats-2gw} "
read -r -a extra_args <<<"${IDEM_SERVE_ARGS:-}"
idem_bin=$build/src/cli/idem
charges_bin=$build/examples/charges/charges
unique_lua=$root/bench/store/unique.lua
for tool in wrk curl python3 "$idem_bin" "$charges_bin"; do
  command -v "$tool" >/dev/null || { echo "missing: $tool" >&2; exit 1; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/idem-serve-bench.XXXXXX")
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  "$root/scripts/nats-fixture.sh" stop "$work/nats" >/dev/null 2>&1 || true
  "$root/scripts/pg-fixture.sh" stop "$work/pg" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
wanted() { [[ $rows == *" $1 "* ]]; }

# start_idem STORE: starts idem serve in front of charges; sets idem_pid and idem_url. A process
# that exits before it is ready (a JetStream cluster that has just started may not answer the
# bucket's creation in time) is started again, three times at most.
start_idem() {
  local port admin attempt
  for attempt in 1 2 3; do
    port=$(free_port)
    admin=$(free_port)
    "$idem_bin" serve --listen "127.0.0.1:$port" --upstream "$upstream" --store "$1" \
      --admin "127.0.0.1:$admin" "${extra_args[@]}" 2>>"$work/idem.log" &
    idem_pid=$!
    pids+=("$idem_pid")
    idem_url=http://127.0.0.1:$port
    idem_admin=http://127.0.0.1:$admin
    for _ in $(seq 300); do
      if curl -sf "http://127.0.0.1:$admin/readyz" >/dev/null 2>&1; then return 0; fi
      kill -0 "$idem_pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -0 "$idem_pid" 2>/dev/null && break  # running but not ready: no second try
    echo "idem serve on $1 exited before it was ready (attempt $attempt)" >&2
  done
  echo "idem serve on $1 did not become ready:" >&2
  tail -n 20 "$work/idem.log" >&2
  return 1
}
stop_idem() {
  kill -TERM "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}
# load URL WRK_THREADS CONNECTIONS TAG: one wrk run of new keys (prefixed TAG); prints the RESULT
# fields of unique.lua.
load() {
  local out
  out=$(wrk -t"$2" -c"$3" -d"$duration" -s "$unique_lua" "$1" -- "$4" 2>&1)
  grep '^RESULT' <<<"$out" | cut -d' ' -f2- || { echo "wrk failed: $out" >&2; return 1; }
}
ticks_per_second=$(getconf CLK_TCK)
# cpu_ticks PID...: the CPU time (user + system, in clock ticks) the processes have used so far.
cpu_ticks() {
  local total=0 pid
  for pid in "$@"; do
    [[ -r /proc/$pid/stat ]] && total=$((total + $(sed 's/.*) //' "/proc/$pid/stat" | awk '{print $12 + $13}')))
  done
  echo "$total"
}
store_kind=none  # postgres, nats or none: whose server processes store_pids lists
# store_pids: the processes of the store's server right now (PostgreSQL: the postmaster and its
# children, the backends among them).
store_pids() {
  case $store_kind in
    postgres)
      local postmaster
      postmaster=$(head -n 1 "$(source "$work/pg/env" && echo "$IDEM_PG_DATA")/postmaster.pid")
      echo "$postmaster" $(pgrep -P "$postmaster")
      ;;
    nats) for i in 1 2 3; do "$root/scripts/nats-fixture.sh" pid "$work/nats" "$i"; done ;;
  esac
}
# nats_counts BUCKET: "<stream writes> <API calls> <messages in> <messages in from idem at a stream
# leader> <messages in from idem> <idem connections on a stream leader> <idem connections>
# <server,buckets led,idem connections>..." of the cluster so far, for the buckets BUCKET and
# BUCKET-I.
nats_counts() {
  local monitors
  mapfile -t monitors <"$work/nats/monitor"
  python3 - "$1" "${monitors[@]}" <<'PY'
import json, sys, urllib.request
bucket, monitors = sys.argv[1], sys.argv[2:]
def get(path): return json.load(urllib.request.urlopen(path, timeout=5))
last, leaders, servers, received, messages, api = {}, {}, {}, {}, 0, 0
for m in monitors:
    v = get(m + "/varz")
    messages += v["in_msgs"]
    j = get(m + "/jsz?accounts=true&streams=true")
    api += j.get("api", {}).get("total", 0)
    for account in j.get("account_details", []):
        for stream in account.get("stream_detail", []):
            if stream["name"] == "KV_" + bucket or stream["name"].startswith("KV_" + bucket + "-"):
                last[stream["name"]] = max(last.get(stream["name"], 0), stream["state"]["last_seq"])
                leader = stream.get("cluster", {}).get("leader")
                leaders.setdefault(leader, set()).add(stream["name"])
    conns = [c for c in get(m + "/connz?limit=4096")["connections"]
             if c.get("name") == "idem key store"]
    servers[v["server_name"]] = len(conns)
    received[v["server_name"]] = sum(c["in_msgs"] for c in conns)
on_leader = sum(n for name, n in servers.items() if name in leaders)
at_leader = sum(n for name, n in received.items() if name in leaders)
roles = ["%s,%d,%d" % (name, len(leaders.get(name, ())), n) for name, n in servers.items()]
print(sum(last.values()), api, messages, at_leader, sum(received.values()), on_leader,
      sum(servers.values()), *roles)
PY
}
counts_before() {
  [[ $store_kind == nats ]] || return 0
  read -r -a counts0 <<<"$(nats_counts "$1")"
  local i
  node_ticks0=()
  for i in 1 2 3; do node_ticks0+=("$(cpu_ticks "$("$root/scripts/nats-fixture.sh" pid "$work/nats" "$i")")"); done
}
# counts_line NAME BUCKET REQUESTS: the line of the row's counts per request (nats rows only).
counts_line() {
  [[ $store_kind == nats ]] || return 0
  local now
  read -r -a now <<<"$(nats_counts "$2")"
  awk -v n="$1" -v q="$3" -v w=$((now[0] - counts0[0])) -v a=$((now[1] - counts0[1])) \
    -v m=$((now[2] - counts0[2])) -v r=$((now[3] - counts0[3])) -v t=$((now[4] - counts0[4])) \
    -v l="${now[5]}" -v c="${now[6]}" 'BEGIN { q = q > 0 ? q : 1; t = t > 0 ? t : 1;
      printf "%s: %.2f stream writes, %.2f JetStream API calls, %.2f server messages in per request; idem connections on a stream leader: %d of %d, which received %.0f%% of idem'"'"'s messages\n", n, w / q, a / q, m / q, l, c, 100 * r / t }' \
    >>"$work/counts"
  local i ticks
  for i in 1 2 3; do
    ticks=$(cpu_ticks "$("$root/scripts/nats-fixture.sh" pid "$work/nats" "$i")")
    awk -v r="${now[$((6 + i))]}" -v t=$((ticks - node_ticks0[i - 1])) -v q="$3" \
      -v h="$ticks_per_second" 'BEGIN { q = q > 0 ? q : 1; split(r, f, ",")
        printf "  %s (leads %d of the buckets, holds %d idem connections): %d µs/req\n", f[1], f[2], f[3], t * 1e6 / h / q }' \
      >>"$work/counts"
  done
}
# batch_totals ADMIN_URL...: "<writes> <batches>" the gateways' group commits have run so far.
batch_totals() {
  local admin writes=0 batches=0 w b
  for admin in "$@"; do
    read -r w b <<<"$(curl -sf "$admin/metrics" | awk '
      /^idem_store_batch_size_sum / { w = $2 } /^idem_store_batch_size_count / { b = $2 }
      END { printf "%d %d", w, b }')"
    writes=$((writes + w)) batches=$((batches + b))
  done
  echo "$writes $batches"
}
# idle_ticks: "<idle> <all>" clock ticks of the machine's CPUs so far (/proc/stat).
idle_ticks() { head -n 1 /proc/stat | awk '{ for (i = 2; i <= NF; ++i) all += $i; print $5, all }'; }
# usage_before ADMIN_URL...: notes the batches and idle CPU that usage_line reports since.
usage_before() { read -r batch0 batches0 <<<"$(batch_totals "$@")"; read -r idle0 all0 <<<"$(idle_ticks)"; }
# usage_line NAME ADMIN_URL...: the row's writes per group commit and the machine's idle CPU.
usage_line() {
  local name=$1 writes batches idle all
  shift
  read -r writes batches <<<"$(batch_totals "$@")"
  read -r idle all <<<"$(idle_ticks)"
  awk -v n="$name" -v w=$((writes - batch0)) -v b=$((batches - batches0)) \
    -v i=$((idle - idle0)) -v a=$((all - all0)) 'BEGIN { b = b > 0 ? b : 1; a = a > 0 ? a : 1
      printf "%s: %.1f writes per group commit (%d commits), machine idle %.0f%% of the run\n", n, w / b, b, 100 * i / a }' \
    >>"$work/usage"
}
cpu_before() { idem_ticks=$(cpu_ticks "$@"); store_ticks=$(cpu_ticks $(store_pids)); }
# cpu_per_request REQUESTS IDEM_PID...: "<idem µs/req> <store µs/req>" since cpu_before.
cpu_per_request() {
  local requests=$1 idem_now store_now
  shift
  idem_now=$(cpu_ticks "$@")
  store_now=$(cpu_ticks $(store_pids))
  awk -v i=$((idem_now - idem_ticks)) -v s=$((store_now - store_ticks)) -v n="$requests" \
    -v t="$ticks_per_second" 'BEGIN { n = n > 0 ? n : 1; printf "%d %d", i * 1e6 / t / n, s * 1e6 / t / n }'
}
# row NAME RESULT... IDEM_US STORE_US: prints one table row.
row() {
  awk -v n="$1" -v r="$2" -v a="$3" -v b="$4" -v q="$5" -v x="$6" -v e="$7" -v c="$8" -v d="$9" \
    'BEGIN { printf "| %s | %d | %.2f | %.2f | %d | %d | %d | %d | %d |\n", n, r, a / 1000, b / 1000, q, x, e, c, d }'
}
# measure NAME STORE [BUCKET]: one idem serve on STORE (a JetStream row names its bucket).
measure() {
  local name=$1 result
  start_idem "$2"
  counts_before "${3:-}"
  usage_before "$idem_admin"
  cpu_before "$idem_pid"
  result=$(load "$idem_url" "$threads" "$connections" "$name")
  usage_line "$name" "$idem_admin"
  # shellcheck disable=SC2046,SC2086
  row "$name" $result $(cpu_per_request $(awk '{print $4}' <<<"$result") "$idem_pid")
  counts_line "$name" "${3:-}" "$(awk '{print $4}' <<<"$result")"
  stop_idem "$idem_pid"
}
# measure_two NAME STORE [BUCKET]: two idem serve on STORE, each loaded by its own wrk -t1 with half the
# connections at the same time; one row of their sums (p50: the mean, p99: the larger).
measure_two() {
  local name=$1 first_pid first_url first_admin wrk1 r1 p50a p99a n1 x1 e1 r2 p50b p99b n2 x2 e2
  start_idem "$2"
  first_pid=$idem_pid first_url=$idem_url first_admin=$idem_admin
  start_idem "$2"
  counts_before "${3:-}"
  usage_before "$first_admin" "$idem_admin"
  cpu_before "$first_pid" "$idem_pid"
  load "$first_url" 1 $((connections / 2)) "$name-1" >"$work/gw1" &
  wrk1=$!
  load "$idem_url" 1 $((connections / 2)) "$name-2" >"$work/gw2"
  wait "$wrk1"
  usage_line "$name" "$first_admin" "$idem_admin"
  read -r r1 p50a p99a n1 x1 e1 <"$work/gw1"
  read -r r2 p50b p99b n2 x2 e2 <"$work/gw2"
  # shellcheck disable=SC2046
  row "$name" $((r1 + r2)) $(((p50a + p50b) / 2)) $((p99a > p99b ? p99a : p99b)) \
    $((n1 + n2)) $((x1 + x2)) $((e1 + e2)) $(cpu_per_request $((n1 + n2)) "$first_pid" "$idem_pid")
  counts_line "$name" "${3:-}" $((n1 + n2))
  stop_idem "$idem_pid"
  stop_idem "$first_pid"
}

echo "idem serve unique keys per store: commit $(git -C "$root" rev-parse --short HEAD)," \
  "wrk -t$threads -c$connections -d$duration; load average at start:$(uptime | sed 's/.*load average://')"
charges_port=$(free_port)
"$charges_bin" --listen "127.0.0.1:$charges_port" 2>"$work/charges.log" &
pids+=($!)
upstream=http://127.0.0.1:$charges_port
for _ in $(seq 100); do curl -sf "$upstream/stats" >/dev/null && break; sleep 0.1; done

echo "| row | req/s | p50 ms | p99 ms | requests | non-2xx | errors | idem µs/req | store µs/req |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
if wanted sqlite; then measure sqlite "sqlite:$build/serve-bench.db"; rm -f "$build"/serve-bench.db*; fi
if wanted postgres || wanted postgres-2gw; then
  "$root/scripts/pg-fixture.sh" start "$work/pg" >/dev/null
  store_kind=postgres
  if wanted postgres; then measure postgres "$(cat "$work/pg/uri")"; fi
  if wanted postgres-2gw; then measure_two postgres-2gw "$(cat "$work/pg/uri")"; fi
  store_kind=none
  "$root/scripts/pg-fixture.sh" stop "$work/pg" >/dev/null
fi
if wanted nats-1 || wanted nats-4 || wanted nats-2gw; then
  "$root/scripts/nats-fixture.sh" start "$work/nats" 3 >/dev/null
  hosts=$(sed 's|nats://||g' "$work/nats/url")
  store_kind=nats
  if wanted nats-1; then measure nats-1 "nats://$hosts?replicas=3&bucket=serve1" serve1; fi
  if wanted nats-4; then measure nats-4 "nats://$hosts?replicas=3&shards=4&bucket=serve4" serve4; fi
  if wanted nats-2gw; then
    measure_two nats-2gw "nats://$hosts?replicas=3&bucket=serve2gw" serve2gw
  fi
  store_kind=none
fi
echo; cat "$work/usage"
if [[ -s $work/counts ]]; then echo; cat "$work/counts"; fi
echo "load average at end:$(uptime | sed 's/.*load average://')"
