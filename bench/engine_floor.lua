-- wrk: the floor state through POST /engine/floor (every form_type), at BENCH_RATE per second per
-- thread (bench/wrk_common.lua), as a pacing engine polls it.
dofile("bench/wrk_common.lua")

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["X-API-Key"] = os.getenv("ENGINE_SECRET")

function next_request(n)
  return wrk.format(nil, "/engine/floor", nil, "{}")
end
