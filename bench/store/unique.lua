-- wrk script for bench/store/serve.sh: POST /charges with the gateway benchmark's JSON body and a
-- new Idempotency-Key per request, "<TAG>-<time>-<thread>-<counter>", so that several wrk
-- processes loading gateways on one store at once never send the same key.
--   wrk ... -s unique.lua URL -- TAG
-- done() prints one line, as bench/gateway/post.lua does:
--   RESULT <req/s> <p50 µs> <p99 µs> <requests> <non-2xx> <socket errors>
local next_id = 0
function setup(thread)
  thread:set("tid", next_id)
  next_id = next_id + 1
end

local counter, prefix
local body = '{"amount": 4200, "currency": "eur"}'

function init(args)
  counter = 0
  prefix = string.format("%s-%d-%d-", args[1] or "u", os.time(), tid)
end

function request()
  counter = counter + 1
  return wrk.format("POST", "/charges",
    {["Content-Type"] = "application/json", ["Idempotency-Key"] = prefix .. counter}, body)
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT %.0f %d %d %d %d %d\n", summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(99), summary.requests, e.status,
    e.connect + e.read + e.write + e.timeout))
end
