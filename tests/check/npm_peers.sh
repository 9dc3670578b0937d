#!/bin/sh
# The zoo's npm peer (docs/idem-check.md, "The zoo"): `idem check` against express-idempotency
# with Redis, whose look-up-then-store lets duplicates sent at once both run: the truth is
# "broken", so the check must exit 1. Needs node, redis-server and the npm packages express,
# express-idempotency and express-idempotency-redis-adapter (NODE_PATH may name where they are);
# without them the test is skipped (exit 77, never counted as passed).
# Usage: npm_peers.sh IDEM_BINARY
set -u
idem=$1
here=$(cd "$(dirname "$0")" && pwd)
skip() { echo "SKIPPED: $1"; exit 77; }
command -v node >/dev/null 2>&1 || skip "node is not installed"
command -v redis-server >/dev/null 2>&1 || skip "redis-server is not installed"
node -e 'for (const m of ["express", "express-idempotency", "express-idempotency-redis-adapter"]) require.resolve(m)' \
  >/dev/null 2>&1 || skip "the npm packages express, express-idempotency and express-idempotency-redis-adapter are not installed (set NODE_PATH)"

free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
dir=$(mktemp -d /tmp/idem-npm-peer-XXXXXX)
redis_port=$(free_port)
api_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
  >"$dir/redis.log" 2>&1 &
redis_pid=$!
node "$here/npm_peer_express.js" "$api_port" "redis://127.0.0.1:$redis_port" >"$dir/node.log" 2>&1 &
node_pid=$!
cleanup() { kill "$node_pid" "$redis_pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"; }
trap cleanup EXIT

ready=no
for _ in $(seq 1 100); do
  if node -e "require('http').get('http://127.0.0.1:$api_port/count',r=>process.exit(r.statusCode===200?0:1)).on('error',()=>process.exit(1))"; then
    ready=yes; break
  fi
  sleep 0.1
done
[ "$ready" = yes ] || { cat "$dir/node.log" "$dir/redis.log"; echo "FAIL: the peer did not start"; exit 1; }

"$idem" check "http://127.0.0.1:$api_port/charges" -d '{"amount":4200}' \
  -H 'Content-Type: application/json' --count-url "http://127.0.0.1:$api_port/count" \
  --count-pointer /effects --only replay,concurrent --json >"$dir/check.json"
code=$?
cat "$dir/check.json"
if [ "$code" -ne 1 ]; then
  echo "FAIL: idem check exited $code against express-idempotency + Redis (broken: expected 1)"
  exit 1
fi
echo "express-idempotency + Redis: exit 1 (broken), as the truth calls for"
