-- wrk: one CRM endpoint (BENCH_ENDPOINT) at BENCH_RATE requests/s per thread (bench/wrk_common.lua),
-- on the existing leads U-000000.. (BENCH_POOL of them); each request from its own client address
-- (X-Forwarded-For, the service trusting one proxy) so the per-IP limits do not apply.
dofile("bench/wrk_common.lua")

local endpoint = os.getenv("BENCH_ENDPOINT")
local pool = tonumber(os.getenv("BENCH_POOL"))
local key = os.getenv("WS_SECRET")

function next_request(n)
  local k = n * 4 + thread_id
  local headers = {["X-API-Key"] = key, ["Content-Type"] = "application/json",
                   ["X-Forwarded-For"] = string.format("10.%d.%d.%d", thread_id, math.floor(k / 250) % 250, k % 250 + 1)}
  local oli_id = string.format("U-%06d", (k * 7919) % pool)
  if endpoint == "missed-activities" then
    return wrk.format("GET", "/api/missed-activities?agentId=501", headers)
  elseif endpoint == "send-callback-request" then
    return wrk.format("POST", "/api/send-callback-request", headers,
                      string.format('{"oliId": "%s", "scheduledAt": "2031-01-01 10:00:00"}', oli_id))
  end
  return wrk.format("POST", "/api/pending-callbacks", headers,
                    string.format('{"oliId": "%s", "scheduledAt": "2031-01-01 10:00"}', oli_id))
end
