-- wrk: POST /engine/agent-state for agents BENCH_FIRST..BENCH_FIRST+BENCH_AGENTS-1 in turn, each
-- request a change (the phone busy, then idle with BENCH_WRAPUP seconds of wrap-up, in turn), at
-- BENCH_RATE per second per thread (bench/wrk_common.lua).
dofile("bench/wrk_common.lua")

local agents = tonumber(os.getenv("BENCH_AGENTS"))
local first = tonumber(os.getenv("BENCH_FIRST"))
local wrapup = tonumber(os.getenv("BENCH_WRAPUP") or "30")
local offset = tonumber(os.getenv("BENCH_OFFSET") or "0")

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["X-API-Key"] = os.getenv("ENGINE_SECRET")

function next_request(n)
  local turn = n + offset
  local agent = first + turn % agents
  local busy = math.floor(turn / agents) % 2 == 0
  local body
  if busy then
    body = string.format('{"agent_id": %d, "ami_idle": false}', agent)
  else
    body = string.format('{"agent_id": %d, "ami_idle": true, "wrapup_seconds": %d}', agent, wrapup)
  end
  return wrk.format(nil, "/engine/agent-state", nil, body)
end
