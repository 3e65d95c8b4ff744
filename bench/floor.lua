-- wrk: one kind of request at BENCH_RATE per second per thread (bench/wrk_common.lua), for the
-- floor benchmark (bench/floor_bench.py): BENCH_ENDPOINT healthz (GET /healthz), push (a 1-lead
-- POST /api/leads, a new oli_id each time) or claim (a predictive POST /engine/claim).
dofile("bench/wrk_common.lua")

local endpoint = os.getenv("BENCH_ENDPOINT")
local run = os.getenv("BENCH_RUN")

wrk.headers["Content-Type"] = "application/json"

function next_request(n)
  if endpoint == "healthz" then
    return wrk.format("GET", "/healthz")
  elseif endpoint == "push" then
    wrk.headers["X-API-Key"] = os.getenv("WS_SECRET")
    local body = string.format('{"oli_id": "F-%s-%d-%d", "phone_number": "9876543210", "client_name": "Floor lead",'
      .. ' "form_type": "credit_card", "priority_id": 2}', run, thread_id, n)
    return wrk.format("POST", "/api/leads", nil, body)
  end
  wrk.headers["X-API-Key"] = os.getenv("ENGINE_SECRET")
  local body = string.format('{"mode": "predictive", "request_id": "%s-%d-%d"}', run, thread_id, n)
  return wrk.format("POST", "/engine/claim", nil, body)
end
