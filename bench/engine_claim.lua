-- wrk: progressive claims through POST /engine/claim for agents 1..BENCH_AGENTS in turn, each with
-- its own request_id, at BENCH_RATE per second per thread (bench/wrk_common.lua).
dofile("bench/wrk_common.lua")

local agents = tonumber(os.getenv("BENCH_AGENTS"))
local run = os.getenv("BENCH_RUN")

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["X-API-Key"] = os.getenv("ENGINE_SECRET")

function next_request(n)
  local body = string.format('{"mode": "progressive", "agent_id": %d, "request_id": "%s-%d-%d"}',
    (n * 7 + thread_id) % agents + 1, run, thread_id, n)
  return wrk.format(nil, "/engine/claim", nil, body)
end
