-- The floor as a pacing engine sees it. rules.views.floor reads these in one REPEATABLE READ
-- transaction (Database.run_snapshot), so they describe one moment.

-- name: next_transaction_repeatable_read()!
-- Applies to the session's next transaction only; the session stays READ COMMITTED.
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ;

-- name: floor_agents(now)
-- Agents per skill and availability: one row per form_type and combination of the columns
-- dialstate.unavailable_reason reads, with how many agents have it (an agent with several skills
-- counts under each). A wrap-up that ended before :now reads as none, so the floor's idle agents
-- of a skill are one row, not one each (1,000 agents were 1,000 rows to read).
SELECT s.form_type, a.panel_active, a.pause_code, a.ami_idle,
       IF(a.wrapup_until > :now, a.wrapup_until, NULL) AS wrapup_until, a.outbound_blocked, COUNT(*) AS agents
FROM sales_agents AS a
JOIN sales_agent_skills AS s ON s.agent_id = a.id
GROUP BY s.form_type, a.panel_active, a.pause_code, a.ami_idle, IF(a.wrapup_until > :now, a.wrapup_until, NULL),
         a.outbound_blocked;

-- name: floor_calls(connect_seconds, connect_seconds_by_form)
-- Live reservations per form_type, and how many of them have had call-connected (an open missed
-- activity of the lead): the rest are ringing, or answered and waiting for a bridge. Reads the
-- (dial_status, isReserved, ...) index prefix: as many rows as calls are live. `pending`:
-- the predictive ones no agent took yet, or one took more than its campaign's connect seconds
-- after the answer (as in claims.sql free_skills), which the abandon limit counts as
-- abandons until they settle.
SELECT m.form_type, COUNT(*) AS reserved,
       SUM(EXISTS (SELECT 1 FROM sales_missed_activities AS x
                   WHERE x.lead_id = m.id AND x.ended_at IS NULL)) AS connected,
       SUM(m.predictive_call = 1
           AND (m.agent_connected_at IS NULL OR m.agent_connected_at < m.reserved_at
                OR TIMESTAMPDIFF(SECOND, m.call_answered_at, m.agent_connected_at)
                   > COALESCE(own.seconds, :connect_seconds))) AS pending
FROM sales_master AS m
LEFT JOIN JSON_TABLE(:connect_seconds_by_form, '$[*]'
                     COLUMNS (form_type VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci PATH '$.form_type',
                              seconds INT PATH '$.seconds')) AS own ON own.form_type = m.form_type
WHERE m.dial_status = 'Calling' AND m.isReserved = 1
GROUP BY m.form_type;

-- name: due_counts(form_type, now, callbacks_open, cap, probe, minute_from, today, period, other_period, other_period_forms, other_period_any, day_from, edge_minute, edge_hour, edge_hour_end)
-- Per form_type (every one some agent has, or only :form_type when not NULL): how many leads are
-- due and unreserved in each claim bucket of claims.sql due_candidates, counting to :cap at most.
-- A bucket's count is read only when its :cap-th entry does not exist (the probe reads :cap index
-- entries), so every count reads at most :cap entries whatever the table holds. And its abandon
-- counts (rules.compliance.abandons), each "answered;abandoned;late_connects;machines" summed over nodes:
-- the last 15 minutes, today and the legal period (the rows of each window as claims.sql
-- free_skills reads them), each a primary-key range of a few rows. One statement: one round trip
-- for every form_type.
SELECT ft.form_type,
  IF(:callbacks_open,
     IF((SELECT id FROM sales_master WHERE dial_status = 'Callback' AND isReserved = 0 AND form_type = ft.form_type
           AND (callback_scheduled_at IS NULL OR callback_scheduled_at <= :now) LIMIT 1 OFFSET :probe) IS NOT NULL,
        :cap,
        (SELECT COUNT(*) FROM sales_master WHERE dial_status = 'Callback' AND isReserved = 0
           AND form_type = ft.form_type AND (callback_scheduled_at IS NULL OR callback_scheduled_at <= :now))),
     0) AS callbacks,
  IF((SELECT id FROM sales_master WHERE dial_status = 'Pending' AND isReserved = 0 AND form_type = ft.form_type
        AND (next_retry_at <= :now OR next_retry_at IS NULL) LIMIT 1 OFFSET :probe) IS NOT NULL,
     :cap,
     (SELECT COUNT(*) FROM sales_master WHERE dial_status = 'Pending' AND isReserved = 0
        AND form_type = ft.form_type AND (next_retry_at <= :now OR next_retry_at IS NULL))) AS pending,
  IF((SELECT id FROM sales_master WHERE dial_status = 'Abandoned' AND isReserved = 0 AND form_type = ft.form_type
        AND (next_retry_at <= :now OR next_retry_at IS NULL) LIMIT 1 OFFSET :probe) IS NOT NULL,
     :cap,
     (SELECT COUNT(*) FROM sales_master WHERE dial_status = 'Abandoned' AND isReserved = 0
        AND form_type = ft.form_type AND (next_retry_at <= :now OR next_retry_at IS NULL))) AS abandoned,
  IF((SELECT id FROM sales_master WHERE dial_status = 'Not Connected' AND isReserved = 0 AND form_type = ft.form_type
        AND next_retry_at <= :now LIMIT 1 OFFSET :probe) IS NOT NULL,
     :cap,
     (SELECT COUNT(*) FROM sales_master WHERE dial_status = 'Not Connected' AND isReserved = 0
        AND form_type = ft.form_type AND next_retry_at <= :now)) AS not_connected,
  CONCAT(COALESCE(m15.answered, 0), ';', COALESCE(m15.abandoned, 0), ';', COALESCE(m15.late_connects, 0), ';',
         COALESCE(m15.machines, 0))
    AS window_15m,
  CONCAT(COALESCE(today.answered, 0), ';', COALESCE(today.abandoned, 0), ';', COALESCE(today.late_connects, 0), ';',
         COALESCE(today.machines, 0))
    AS window_today,
  CONCAT(COALESCE(period.answered, 0), ';', COALESCE(period.abandoned, 0), ';', COALESCE(period.late_connects, 0), ';',
         COALESCE(period.machines, 0))
    AS window_period
FROM (SELECT DISTINCT form_type FROM sales_agent_skills WHERE :form_type IS NULL
      UNION SELECT :form_type FROM DUAL WHERE :form_type IS NOT NULL) AS ft
-- Each window's rows read once for every form_type: one range of the counts' key (grain, starts_at).
LEFT JOIN (SELECT form_type, SUM(answered) AS answered, SUM(abandoned) AS abandoned,
                  SUM(late_connects) AS late_connects, SUM(machines) AS machines
           FROM dialerapi_abandon_counts WHERE grain = 'm' AND starts_at >= :minute_from
           GROUP BY form_type) AS m15 ON m15.form_type = ft.form_type
LEFT JOIN (SELECT form_type, SUM(answered) AS answered, SUM(abandoned) AS abandoned,
                  SUM(late_connects) AS late_connects, SUM(machines) AS machines
           FROM dialerapi_abandon_counts WHERE grain = 'd' AND starts_at = :today
           GROUP BY form_type) AS today ON today.form_type = ft.form_type
-- The period's rows: the floor's period for most form_types, :other_period for a campaign's own,
-- each a range of one grain (a constant period picks it).
LEFT JOIN (SELECT form_type, SUM(answered) AS answered, SUM(abandoned) AS abandoned,
                  SUM(late_connects) AS late_connects, SUM(machines) AS machines
           FROM dialerapi_abandon_counts
           WHERE ((:period = '30d' AND grain = 'd' AND starts_at >= :day_from)
                  OR (:period = '24h' AND grain = 'h' AND starts_at > :edge_hour)
                  OR (:period = '24h' AND grain = 'm' AND starts_at >= :edge_minute AND starts_at < :edge_hour_end))
             AND form_type NOT IN :other_period_forms
           GROUP BY form_type
           UNION ALL
           SELECT form_type, SUM(answered), SUM(abandoned), SUM(late_connects), SUM(machines)
           FROM dialerapi_abandon_counts
           WHERE ((:other_period = '30d' AND grain = 'd' AND starts_at >= :day_from)
                  OR (:other_period = '24h' AND grain = 'h' AND starts_at > :edge_hour)
                  OR (:other_period = '24h' AND grain = 'm' AND starts_at >= :edge_minute AND starts_at < :edge_hour_end))
             AND form_type IN :other_period_forms AND :other_period_any
           GROUP BY form_type) AS period ON period.form_type = ft.form_type
ORDER BY ft.form_type;

-- name: floor_holding()
-- Per form_type, the live calls answered and waiting for an agent (the supervisor's board):
-- answered in this reservation (call_answered_at, abandons.mark_answered, not before
-- reserved_at) and no call-connected yet. The rest of floor_calls' not-connected calls are ringing.
SELECT m.form_type, COUNT(*) AS holding
FROM sales_master AS m
WHERE m.dial_status = 'Calling' AND m.isReserved = 1 AND m.call_answered_at >= m.reserved_at
  AND NOT EXISTS (SELECT 1 FROM sales_missed_activities AS x WHERE x.lead_id = m.id AND x.ended_at IS NULL)
GROUP BY m.form_type;
