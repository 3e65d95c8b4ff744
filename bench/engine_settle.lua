-- wrk: settle (no answer) through POST /engine/settle every live lead listed in BENCH_OLI_FILE (one
-- oli_id a line), then stop; at BENCH_RATE per second, one thread (bench/wrk_common.lua).
dofile("bench/wrk_common.lua")

local run = os.getenv("BENCH_RUN")
local oli_ids = {}
for line in io.lines(os.getenv("BENCH_OLI_FILE")) do
  oli_ids[#oli_ids + 1] = line
end

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["X-API-Key"] = os.getenv("ENGINE_SECRET")

function next_request(n)
  local body = string.format(
    '{"oli_id": "%s", "outcome": "no_answer", "started_at": "%s", "call_id": "%s-%d"}',
    oli_ids[math.min(n, #oli_ids)], os.date("!%Y-%m-%dT%H:%M:%SZ"), run, n)
  return wrk.format(nil, "/engine/settle", nil, body)
end

function exhausted(n)
  return n >= #oli_ids
end
