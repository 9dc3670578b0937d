#!/usr/bin/env bash
# Instructions per unique request of idem serve (SQLite, a new key per request), by callgrind:
# independent of the machine's load, so two builds can be compared on a busy machine where
# bench/gateway/run.sh's CPU per request moves 10-20% between runs (issue 42: "the gateway's
# figures no worse").
#
#   bench/gateway/callgrind-unique.sh BUILD_DIR [BUILD_DIR...]
#
# For each build: examples/charges as the upstream, idem serve under valgrind (instrumentation
# off), a warm-up, then instrumentation on for SECONDS (15) of wrk -t1 -c8 with
# bench/store/unique.lua, off again; the instructions counted divided by the requests wrk
# completed. Prints one row per build: requests, instructions per request (user space only: the
# kernel's share of a write or an fsync is not counted), and the top functions by inclusive
# instructions per request (TOP, 12). Needs valgrind and wrk; release builds (targets idem
# charges). KEEP=DIR keeps each build's callgrind dump there (b1.cg, b2.cg, ...) for
# callgrind_annotate.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
seconds=${SECONDS_LOAD:-15}
top=${TOP:-12}
if (($# == 0)); then
  echo "usage: $0 BUILD_DIR [BUILD_DIR...]" >&2
  exit 2
fi
for tool in valgrind callgrind_control callgrind_annotate wrk curl python3; do
  command -v "$tool" >/dev/null || { echo "missing: $tool" >&2; exit 1; }
done
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
work=$(mktemp -d "${TMPDIR:-/tmp}/idem-cgunique.XXXXXX")
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

measure() {
  local build=$1 tag=$2 charges_port port admin idem_pid result requests total
  charges_port=$(free_port)
  "$build/examples/charges/charges" --listen "127.0.0.1:$charges_port" 2>"$work/$tag-charges.log" &
  pids+=($!)
  port=$(free_port)
  admin=$(free_port)
  valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$work/$tag.cg" \
    "$build/src/cli/idem" serve --listen "127.0.0.1:$port" --admin "127.0.0.1:$admin" \
    --upstream "http://127.0.0.1:$charges_port" --store "sqlite:$work/$tag.db" \
    2>"$work/$tag-idem.log" &
  idem_pid=$!
  pids+=("$idem_pid")
  for _ in $(seq 600); do
    curl -fsS -o /dev/null --max-time 1 "http://127.0.0.1:$admin/healthz" 2>/dev/null && break
    kill -0 "$idem_pid" 2>/dev/null || { cat "$work/$tag-idem.log" >&2; exit 1; }
    sleep 0.1
  done
  wrk -t1 -c8 -d3s -s "$root/bench/store/unique.lua" "http://127.0.0.1:$port" -- "warm$tag" \
    >/dev/null
  callgrind_control -i on "$idem_pid" >/dev/null
  result=$(wrk -t1 -c8 -d"${seconds}s" -s "$root/bench/store/unique.lua" \
    "http://127.0.0.1:$port" -- "cg$tag" | grep '^RESULT')
  callgrind_control -i off "$idem_pid" >/dev/null
  callgrind_control -d "$idem_pid" >/dev/null
  kill -TERM "$idem_pid"
  wait "$idem_pid" 2>/dev/null || true
  requests=$(awk '{print $5}' <<<"$result")
  local dump
  dump=$(ls "$work/$tag.cg"* | sort | tail -n1)
  if [[ -n ${KEEP:-} ]]; then mkdir -p "$KEEP" && cp "$dump" "$KEEP/$tag.cg"; fi
  total=$(callgrind_annotate "$dump" 2>/dev/null | awk '/PROGRAM TOTALS/ && !done {gsub(",", "", $1); print $1; done = 1}')
  printf '%-40s requests %6d  instructions/request %8.0f\n' "$build" "$requests" \
    "$(bc -l <<<"$total / $requests")"
  callgrind_annotate --inclusive=yes "$dump" 2>/dev/null |
    awk -v n="$requests" -v top="$top" '
      /^-+$/ {sep++; next}
      sep >= 3 && NF >= 2 && $1 ~ /^[0-9,]+$/ && shown < top {
        ir = $1; gsub(",", "", ir); $1 = ""; name = substr($0, 2)
        sub(/ \[.*$/, "", name)
        printf "    %10.0f  %s\n", ir / n, substr(name, 1, 110); shown++ }'
}

i=0
for build in "$@"; do
  i=$((i + 1))
  measure "$build" "b$i"
done
