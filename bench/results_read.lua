-- wrk: the CRM reading results back (issue #48) at BENCH_RATE per second per thread
-- (bench/wrk_common.lua). BENCH_MODE=lead: GET /api/leads/{oli_id}?limit=100 of the BENCH_LEADS
-- leads RESULTS-1.. (each with 100 call attempts); BENCH_MODE=feed: GET /api/lead-events with
-- limit=1000 from a position spread over the first BENCH_EVENTS events. Each request from its own
-- client address (X-Forwarded-For; the service trusts one proxy) so the per-address limit stays out.
dofile("bench/wrk_common.lua")

local mode = os.getenv("BENCH_MODE")
local leads = tonumber(os.getenv("BENCH_LEADS") or "100")
local events = tonumber(os.getenv("BENCH_EVENTS") or "100000")
local key = os.getenv("WS_SECRET")
-- The reference (bench/reference_results_app.py) answers the same reads at /lead/ and /lead-events.
local lead_path = os.getenv("BENCH_REFERENCE") and "/lead/" or "/api/leads/"
local feed_path = os.getenv("BENCH_REFERENCE") and "/lead-events" or "/api/lead-events"

function next_request(n)
  local k = n * 4 + thread_id
  local headers = {["X-API-Key"] = key,
                   ["X-Forwarded-For"] = string.format("10.%d.%d.%d", thread_id, math.floor(k / 250) % 250, k % 250 + 1)}
  if mode == "lead" then
    return wrk.format("GET", string.format("%sRESULTS-%d?limit=100", lead_path, (k * 7919) % leads + 1), headers)
  end
  return wrk.format("GET", string.format("%s?after=%d&limit=1000", feed_path, (k * 7919) % (events - 1000)), headers)
end
