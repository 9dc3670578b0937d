#!/usr/bin/env bash
# The main job: installs what is missing, builds idem (release), starts examples/charges (a naive
# payments API that creates a new charge on every POST) and `idem serve` in front of it on the
# embedded store (SQLite), sends a POST, retries it, shows that the retry was replayed and that the
# upstream counted one charge, then keeps both running for you until Ctrl-C.
#
# Ports and the store can be changed: IDEM_PORT (8080), IDEM_ADMIN_PORT (8081), CHARGES_PORT
# (9000), IDEM_DB (a fresh file in a temporary folder).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" --target idem charges

idem_port=${IDEM_PORT:-8080}
admin_port=${IDEM_ADMIN_PORT:-8081}
charges_port=${CHARGES_PORT:-9000}
work=$(mktemp -d)
db=${IDEM_DB:-$work/idem.db}
pids=()
stop() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap stop EXIT
trap 'echo; echo "stopping idem serve and charges"; exit 0' INT TERM

build/release/examples/charges/charges --listen "127.0.0.1:$charges_port" 2>"$work/charges.log" &
pids+=($!)
build/release/src/cli/idem serve --listen "127.0.0.1:$idem_port" \
  --upstream "http://127.0.0.1:$charges_port" --store "sqlite:$db" \
  --admin "127.0.0.1:$admin_port" 2>"$work/idem.log" &
pids+=($!)

# Wait (at most 10 s) until the gateway is ready: store open, upstream accepting connections.
for _ in $(seq 100); do
  if curl -sf "http://127.0.0.1:$admin_port/readyz" >/dev/null 2>&1; then break; fi
  if ! kill -0 "${pids[1]}" 2>/dev/null; then cat "$work/idem.log" >&2; exit 1; fi
  sleep 0.1
done
curl -sf "http://127.0.0.1:$admin_port/readyz" >/dev/null || { cat "$work/idem.log" >&2; exit 1; }

key="order-$(date +%s)-$RANDOM"
post() {
  curl -s -i -X POST "http://127.0.0.1:$idem_port/charges" -H "Idempotency-Key: $key" \
    -H 'Content-Type: application/json' -d '{"amount": 4200, "currency": "eur"}'
  echo
}
echo "== first POST (key $key): forwarded to charges, which creates a charge"
post
echo
echo "== the same POST again (a client retry): answered by idem, not by charges"
post | tee "$work/retry.txt"
echo
grep -qi '^Idempotent-Replayed: true' "$work/retry.txt" || { echo "no replay header" >&2; exit 1; }
echo "== what charges counted:"
curl -s "http://127.0.0.1:$charges_port/stats"
echo
charges=$(curl -s "http://127.0.0.1:$charges_port/stats" | sed -n 's/.*"charges":\([0-9]*\).*/\1/p')
if [[ $charges != 1 ]]; then echo "expected one charge, charges counted $charges" >&2; exit 1; fi
echo "one charge for two POSTs: the retry was replayed (Idempotent-Replayed: true)"
echo
echo "idem serve listens on 127.0.0.1:$idem_port in front of charges on 127.0.0.1:$charges_port."
echo "Try it (run the first line twice, then change the body and see 422):"
echo "  curl -i -X POST http://127.0.0.1:$idem_port/charges -H 'Idempotency-Key: my-key-1' -H 'Content-Type: application/json' -d '{\"amount\": 100}'"
echo "  curl -s http://127.0.0.1:$admin_port/metrics | grep idem_requests_total"
echo "Press Ctrl-C to stop both."
wait
