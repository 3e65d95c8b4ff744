-- The floor simulator (dialerapi/simulate/): every query runs in the run's own schema.

-- name: sim_set_dialer_config(retry_pattern, retry_seconds, max_tries, work_start, work_end, outbound_obey_work_hours, obey_calling_window, calling_window_start, calling_window_end, enforce_abandon_limit, abandon_limit, abandon_period, abandon_min_answered, abandon_connect_seconds, caller_id_daily_cap)!
UPDATE sales_dialer_config
SET retry_pattern = :retry_pattern, retry_seconds = :retry_seconds, max_tries = :max_tries,
    work_start = :work_start, work_end = :work_end, outbound_obey_work_hours = :outbound_obey_work_hours,
    obey_calling_window = :obey_calling_window, calling_window_start = :calling_window_start,
    calling_window_end = :calling_window_end, enforce_abandon_limit = :enforce_abandon_limit,
    abandon_limit = :abandon_limit, abandon_period = :abandon_period,
    abandon_min_answered = :abandon_min_answered, abandon_connect_seconds = :abandon_connect_seconds,
    caller_id_daily_cap = :caller_id_daily_cap, isMaintainance = 0
WHERE id = 1;

-- name: sim_status_counts(max_tries_remark)
-- Final statuses; Disposed is split by who disposed the lead: the CRM, or the dialer at max tries.
SELECT CASE WHEN dial_status = 'Disposed' AND disposeRemark = :max_tries_remark THEN 'Disposed (max tries)'
            WHEN dial_status = 'Disposed' THEN 'Disposed (CRM)'
            ELSE dial_status END AS status,
       COUNT(*) AS n
FROM sales_master GROUP BY status ORDER BY status;

-- name: sim_call_counts()
-- call_count: tries of the lead's current sequence, the ones max_tries counts (a CRM callback resets it).
SELECT call_count AS tries, COUNT(*) AS n FROM sales_master GROUP BY call_count ORDER BY call_count;

-- name: sim_calls_per_lead()
-- Every settled call of each lead, originate failures and callback calls included.
SELECT calls, COUNT(*) AS n FROM (
  SELECT m.id, COUNT(a.id) AS calls
  FROM sales_master AS m LEFT JOIN sales_call_attempts AS a ON a.lead_id = m.id
  GROUP BY m.id
) AS per_lead
GROUP BY calls ORDER BY calls;

-- name: sim_hour_state(now)^
-- At an hour's end: leads whose retry is due and not yet dialed, and leads dialed at least once.
SELECT
  COALESCE(SUM(isReserved = 0 AND dial_status IN ('Not Connected', 'Abandoned') AND next_retry_at <= :now), 0)
    AS retry_backlog,
  COALESCE(SUM(first_attempt_at IS NOT NULL), 0) AS dialed,
  COUNT(*) AS leads
FROM sales_master;

-- name: sim_blocked_agents()
SELECT id FROM sales_agents WHERE outbound_blocked = 1 ORDER BY id;

-- name: sim_next_due(form_type, now, fallback_edge, fallback_never)^
-- When time alone next makes a lead of form_type due to a predictive claim (simulate.pacing):
-- `due`, the earliest claim_due after :now of its claimable leads; `owned_due`, apart, the
-- earliest due time of a personal callback that has not fallen back at :now, which is
-- due to a predictive claim only at its fallback. NULL when there is none. A lead whose number is
-- live through another lead is left out: it is claimable again at that call's settle, which the
-- floor hears of (one live call per number).
SELECT MIN(IF(m.claim_bucket = 1 AND m.callback_agent_id IS NOT NULL, NULL,
              IF(m.claim_due > :now, m.claim_due, NULL))) AS due,
       MIN(IF(m.claim_bucket = 1 AND m.callback_agent_id IS NOT NULL AND NOT :fallback_never, m.claim_due, NULL))
         AS owned_due
FROM sales_master AS m FORCE INDEX (ix_claim_due)
WHERE m.form_type = :form_type AND m.claim_bucket IN (1, 2, 3, 4) AND m.claim_due > :fallback_edge
  AND NOT EXISTS (SELECT 1 FROM sales_master AS o
                  WHERE o.phone_e164 = m.phone_e164 AND o.isReserved = 1 AND o.id <> m.id);

-- name: sim_server_socket()^
-- The server's Unix socket file ('' or NULL: none), for a run on the same host (simulate.sandbox).
SELECT @@socket AS socket;

-- name: sim_calls_by_area_code()
-- The most calls the leads of one NANP area code had on one day (E.164 digits through the area
-- code, `1212`): the calls a pool's numbers of that area code would present, originate failures
-- (which give their count back) aside.
SELECT prefix, MAX(calls) AS calls FROM (
  SELECT m.phone_e164 DIV 10000000 AS prefix, DATE(a.ended_at) AS day, COUNT(*) AS calls
  FROM sales_call_attempts AS a JOIN sales_master AS m ON m.id = a.lead_id
  WHERE m.phone_e164 BETWEEN 12000000000 AND 19999999999 AND a.result <> 'ORIGINATE_FAILED'
  GROUP BY prefix, day
) AS per_day
GROUP BY prefix ORDER BY prefix;
