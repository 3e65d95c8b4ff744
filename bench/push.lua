-- wrk: lead push, one 500-lead batch per request, to BENCH_PATH (the service's /api/leads or the
-- reference's /push). BENCH_KIND=new: every oli_id never seen before; BENCH_KIND=update: batches of
-- the BENCH_POOL existing oli_ids U-000000.. in turn, so each batch updates 500 rows, each with a new
-- number; BENCH_KIND=same: those batches with the number each lead already has (bench/common.py
-- FILL: 9198 and the lead's index in 8 digits), as a CRM re-pushing its day sends them. Names carry
-- Devanagari as CRM batches do; phones are punctuated as CRMs send them.
dofile("bench/wrk_common.lua")

local path = os.getenv("BENCH_PATH")
local kind = os.getenv("BENCH_KIND")
local run = os.getenv("BENCH_RUN")
local batches = tonumber(os.getenv("BENCH_POOL")) / 500
local threads = tonumber(os.getenv("BENCH_THREADS"))

wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["X-API-Key"] = os.getenv("WS_SECRET")

local LEAD = '{"oli_id": "%s", "phone_number": "+91 98%03d-%05d", "client_name": "प्रिया शर्मा %d", ' ..
             '"form_type": "home_loan", "priority_id": 2}'

function next_request(n)
  local leads = {}
  local batch = (n - 1) * threads + thread_id - 1
  for i = 1, 500 do
    local oli_id
    if kind == "new" then
      oli_id = string.format("N%s-%d-%d-%03d", run, thread_id, n, i)
    else
      oli_id = string.format("U-%06d", (batch % batches) * 500 + i - 1)
    end
    if kind == "same" then
      local k = (batch % batches) * 500 + i - 1
      leads[i] = string.format(LEAD, oli_id, math.floor(k / 100000), k % 100000, i)
    else
      leads[i] = string.format(LEAD, oli_id, i, n % 100000, i)
    end
  end
  return wrk.format(nil, path, nil, '{"leads": [' .. table.concat(leads, ", ") .. ']}')
end
