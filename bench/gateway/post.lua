-- wrk script for bench/gateway/run.sh: POST /charges with a JSON body and an Idempotency-Key.
--   wrk ... -s post.lua URL -- unique      every request a new key (thread id + counter)
--   wrk ... -s post.lua URL -- replay N    keys replay-0 .. replay-(N-1), the same body each time
--   wrk ... -s post.lua URL -- none        no key (plain proxying)
-- done() prints one line: RESULT <req/s> <p50 µs> <p99 µs> <requests> <non-2xx> <socket errors>
local threads = {}
local next_id = 0

function setup(thread)
  thread:set("tid", next_id)
  next_id = next_id + 1
  table.insert(threads, thread)
end

local mode, replay_keys, counter, prefix
local body = '{"amount": 4200, "currency": "eur"}'
local base_headers

function init(args)
  mode = args[1] or "unique"
  replay_keys = tonumber(args[2] or "100")
  counter = 0
  prefix = string.format("u%d-%d-", os.time(), tid)
end

function request()
  counter = counter + 1
  local headers = {["Content-Type"] = "application/json"}
  if mode == "unique" then
    headers["Idempotency-Key"] = prefix .. counter
  elseif mode == "replay" then
    headers["Idempotency-Key"] = "replay-" .. (counter % replay_keys)
  end
  return wrk.format("POST", "/charges", headers, body)
end

function done(summary, latency, requests)
  local e = summary.errors
  local seconds = summary.duration / 1e6
  io.write(string.format("RESULT %.0f %d %d %d %d %d\n", summary.requests / seconds,
    latency:percentile(50), latency:percentile(99), summary.requests, e.status,
    e.connect + e.read + e.write + e.timeout))
end
