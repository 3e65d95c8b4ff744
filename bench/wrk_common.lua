-- Shared by the wrk scripts of `make bench`: requests as fast as answered or at a fixed rate, and
-- one JSON line of results.
--
-- A script defines next_request(n) (the n-th request of its thread, built with wrk.format) and may
-- define exhausted(n) (true: this thread has nothing more to send). With BENCH_RATE set, each
-- thread sends that many requests per second on a fixed schedule (one connection per thread): the
-- n-th is due at start + n / rate, so a slow answer delays only the requests it overlaps; without
-- it, every connection sends its next request as soon as the last is answered. done() prints the
-- achieved rate (requests over the time from the first request to the last answer) and wrk's own
-- latency percentiles, measured in C on the client.
local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
int clock_gettime(int clock_id, bench_timespec *tp);
]]
local timespec = ffi.new("bench_timespec")
local CLOCK_MONOTONIC = 1

local function now()
  ffi.C.clock_gettime(CLOCK_MONOTONIC, timespec)
  return tonumber(timespec.tv_sec) + tonumber(timespec.tv_nsec) / 1e9
end

local rate = tonumber(os.getenv("BENCH_RATE") or "")
local threads = {}

function setup(thread)
  threads[#threads + 1] = thread
  thread:set("thread_id", #threads)
end

sent = 0

function delay()
  if rate == nil or first == nil then
    return 0
  end
  local wait = (first + sent / rate - now()) * 1000
  return wait > 0 and wait or 0
end

function request()
  first = first or now()
  sent = sent + 1
  return next_request(sent)
end

function response(status, headers, body)
  last = now()
  if status > 399 and first_error == nil then
    -- The first failed answer of this thread, for the report (which of 409, 503, ... it was).
    first_error = status .. " " .. string.sub(string.gsub(body or "", '[%c"\\]', " "), 1, 200)
  end
  if exhausted and exhausted(sent) then
    wrk.thread:stop()
  end
end

function done(summary, latency, requests)
  local begin, finish, first_error = math.huge, 0, ""
  for _, thread in ipairs(threads) do
    begin = math.min(begin, thread:get("first") or math.huge)
    finish = math.max(finish, thread:get("last") or 0)
    first_error = thread:get("first_error") or first_error
  end
  local e = summary.errors
  io.write(string.format(
    '{"requests": %d, "seconds": %.3f, "rate_per_s": %.1f, "status_errors": %d, "socket_errors": %d, ' ..
    '"p50_ms": %.3f, "p90_ms": %.3f, "p99_ms": %.3f, "max_ms": %.3f, "first_error": "%s"}\n',
    summary.requests, finish - begin, summary.requests / (finish - begin), e.status,
    e.connect + e.read + e.write + e.timeout, latency:percentile(50) / 1000, latency:percentile(90) / 1000,
    latency:percentile(99) / 1000, latency.max / 1000, first_error))
end
