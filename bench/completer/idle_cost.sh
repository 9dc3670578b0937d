#!/usr/bin/env bash
# The completer's cost when idle (docs/gateway.md, "Recovering lapsed claims"): one idem serve with
# a `recover` route in front of examples/charges, no traffic, on a store that already holds
# FILL_KEYS finished records (and no lapsed claim). Prints the store reads the completer made per
# second (idem_recovery_scans_total over the window) and the time one such read takes on that store
# (the completer's query, timed by the store's own client).
#
#   BUILD_DIR=build/release [STORE=sqlite|postgres|nats] [WINDOW=60] [INTERVAL=5s] \
#     [FILL_KEYS=1000000] [FILL_SECONDS=30] bash bench/completer/idle_cost.sh
# STORE=postgres starts a private server with scripts/pg-fixture.sh. STORE=nats starts a private
# three-node cluster (scripts/nats-fixture.sh; an R=3 bucket, SHARDS=1 by default) and fills it
# through the gateway itself: wrk posts unique keys for FILL_SECONDS (FILL_KEYS is not used; the
# bucket's record count is printed), then the window runs idle; it also prints the CPU the three
# nats-server processes spent in the window, since there a list reads every record of every
# shard's bucket.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build/release}
store_kind=${STORE:-sqlite}
window=${WINDOW:-60}
interval=${INTERVAL:-5s}
fill=${FILL_KEYS:-1000000}
work=$(mktemp -d /tmp/idem-completer-bench.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [[ "$store_kind" == postgres ]] && bash scripts/pg-fixture.sh stop "$work/pg" >/dev/null 2>&1 || true
  [[ "$store_kind" == nats ]] && bash scripts/nats-fixture.sh stop "$work/nats" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

if [[ "$store_kind" == postgres ]]; then
  bash scripts/pg-fixture.sh start "$work/pg" >/dev/null
  uri=$(cat "$work/pg/uri")
  store=$uri
elif [[ "$store_kind" == nats ]]; then
  bash scripts/nats-fixture.sh start "$work/nats" 3 >/dev/null
  hosts=$(sed 's#nats://##g' "$work/nats/url")
  store="nats://$hosts?bucket=idle$$&replicas=3&shards=${SHARDS:-1}"
else
  store="sqlite:$work/idem.db"
fi
cat >"$work/idem.toml" <<TOML
recover_interval = "$interval"
[[route]]
path_prefix = "/"
recover = "resend"
TOML
"$build/examples/charges/charges" --listen 127.0.0.1:19400 --dedupe-keys 2>/dev/null &
pids+=($!)
"$build/src/cli/idem" serve --listen 127.0.0.1:19401 --admin 127.0.0.1:19402 \
  --upstream http://127.0.0.1:19400 --store "$store" --config "$work/idem.toml" \
  2>"$work/idem.log" &
pids+=($!)
for _ in $(seq 100); do curl -sf http://127.0.0.1:19402/healthz >/dev/null && break; sleep 0.1; done
# FILL_KEYS completed records, as the gateway would have left them (the gateway made the schema).
now_ms=$(($(date +%s%N) / 1000000))
if [[ "$store_kind" == nats ]]; then
  wrk -t2 -c8 -d"${FILL_SECONDS:-30}s" -s bench/store/unique.lua http://127.0.0.1:19401/charges \
    -- idle | grep RESULT
  sleep 1  # the last answers' records are written by then; the window starts idle
  keys=0
  while read -r mon; do
    n=$(curl -s "$mon/jsz?streams=true" | python3 -c 'import json, sys
d = json.load(sys.stdin)
print(sum(s["state"]["messages"] for a in d.get("account_details", [])
          for s in a.get("stream_detail", []) if s["name"].startswith("KV_idle")))')
    keys=$(( n > keys ? n : keys ))
  done <"$work/nats/monitor"
  fill=$keys
elif [[ "$store_kind" == postgres ]]; then
  psql -q "$uri" -c "INSERT INTO idem_keys (tenant, key, fingerprint, state, fence, owner,
    lease_until_ms, status, created_ms, updated_ms, expires_ms)
    SELECT '', 'k' || g, 'f', 2, g, 'o', $now_ms, 201, $now_ms, $now_ms, $now_ms + 86400000
    FROM generate_series(1, $fill) g; ANALYZE idem_keys;"
else
  sqlite3 "$work/idem.db" "WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g
    WHERE n < $fill) INSERT INTO idem_keys (tenant, key, fingerprint, state, fence, owner,
    lease_until, status, created, updated, expires) SELECT '', 'k' || n, 'f', 'completed', n, 'o',
    $now_ms, 201, $now_ms, $now_ms, $now_ms + 86400000 FROM g; ANALYZE;"
fi

scans() { curl -s http://127.0.0.1:19402/metrics | awk '$1 == "idem_recovery_scans_total" {print $2}'; }
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
servers_cpu() {
  local total=0 i
  for i in 1 2 3; do total=$((total + $(cpu "$(bash scripts/nats-fixture.sh pid "$work/nats" "$i")"))); done
  echo "$total"
}
[[ "$store_kind" == nats ]] && n0=$(servers_cpu)
s0=$(scans); c0=$(cpu "${pids[1]}"); t0=$(date +%s.%N)
sleep "$window"
s1=$(scans); c1=$(cpu "${pids[1]}"); t1=$(date +%s.%N)
[[ "$store_kind" == nats ]] && n1=$(servers_cpu)
ticks=$(getconf CLK_TCK)
echo "store=$store_kind fill=$fill interval=$interval window=${window}s"
awk -v s0="$s0" -v s1="$s1" -v t0="$t0" -v t1="$t1" -v c0="$c0" -v c1="$c1" -v hz="$ticks" \
  'BEGIN { printf "scans %d in %.1f s: %.3f store reads/s; gateway CPU %.2f%% of a core\n",
           s1 - s0, t1 - t0, (s1 - s0) / (t1 - t0), 100 * (c1 - c0) / hz / (t1 - t0) }'

# One read of the completer's query on this store, timed by the store's own client.
if [[ "$store_kind" == nats ]]; then
  awk -v n0="$n0" -v n1="$n1" -v t0="$t0" -v t1="$t1" -v hz="$ticks" \
    'BEGIN { printf "nats-server CPU (3 nodes) %.2f%% of a core\n", 100 * (n1 - n0) / hz / (t1 - t0) }'
  for _ in 1 2 3; do
    /usr/bin/time -o "$work/time" -f "one list by idem keys list (process start included): %e s" \
      "$build/src/cli/idem" keys list --store "$store" --lapsed --limit 500 >/dev/null 2>&1 || true
    grep -v '^Command' "$work/time"
    /usr/bin/time -o "$work/time" \
      -f "the same process reading one absent key instead (start, open, one read): %e s" \
      "$build/src/cli/idem" keys show --store "$store" absent-key >/dev/null 2>&1 || true
    grep -v '^Command' "$work/time"
  done
elif [[ "$store_kind" == postgres ]]; then
  psql -q "$uri" -c "EXPLAIN (ANALYZE, COSTS OFF) SELECT * FROM idem_keys WHERE true AND
    expires_ms > $now_ms AND state = 1 AND lease_until_ms <= $now_ms
    ORDER BY tenant COLLATE \"C\", key COLLATE \"C\" LIMIT 500" | grep -E "Index|Scan|Execution"
else
  sqlite3 "$work/idem.db" "EXPLAIN QUERY PLAN SELECT * FROM idem_keys INDEXED BY
    idem_keys_in_progress WHERE 1 AND expires > $now_ms
    AND state = 'in_progress' AND (CASE WHEN lease_boot = NULL THEN lease_host <= NULL ELSE
    lease_until <= $now_ms END) ORDER BY tenant, key LIMIT 500;"
  printf '.timer on\nSELECT count(*) FROM (SELECT * FROM idem_keys INDEXED BY idem_keys_in_progress
    WHERE 1 AND expires > %s AND
    state = '"'"'in_progress'"'"' AND lease_until <= %s ORDER BY tenant, key LIMIT 500);\n' \
    "$now_ms" "$now_ms" | sqlite3 "$work/idem.db"
fi
