-- The abandon rate: the moments of a call in progress, the counts settles keep, and
-- the windows read from them (rules.compliance.abandons). Callers own the transaction.

-- name: mark_answered(id, now)!
-- The first bridge of the current reservation: the customer answered. A moment left from an
-- earlier reservation (written before its claim) is replaced; NULL reserved_at (an engine's own
-- SQL claim) keeps the first one.
UPDATE sales_master
SET call_answered_at = IF(call_answered_at IS NULL OR call_answered_at < reserved_at, :now, call_answered_at)
WHERE id = :id;

-- name: mark_agent_connected(id, now)!
-- The first call-connected of the current reservation: an agent took the call.
UPDATE sales_master
SET agent_connected_at = IF(agent_connected_at IS NULL OR agent_connected_at < reserved_at, :now,
                            agent_connected_at)
WHERE id = :id;

-- name: mark_predictive(id)!
UPDATE sales_master SET predictive_call = 1 WHERE id = :id;

-- name: count_settle(form_type, day, hour, minute, answered, abandoned, late_connects, machines)!
-- One settle in its floor day, hour and minute, on this node's rows (`node`): settles on
-- two Galera nodes never write one row. Rows in PK order, so two settles lock them in one order.
-- machines: settles with outcome machine.
INSERT INTO dialerapi_abandon_counts
  (grain, form_type, starts_at, node, calls, answered, abandoned, late_connects, machines)
VALUES ('d', :form_type, :day, CONCAT(@@hostname, ':', @@port), 1, :answered, :abandoned, :late_connects, :machines),
       ('h', :form_type, :hour, CONCAT(@@hostname, ':', @@port), 1, :answered, :abandoned, :late_connects, :machines),
       ('m', :form_type, :minute, CONCAT(@@hostname, ':', @@port), 1, :answered, :abandoned, :late_connects, :machines)
ON DUPLICATE KEY UPDATE calls = calls + VALUES(calls), answered = answered + VALUES(answered),
  abandoned = abandoned + VALUES(abandoned), late_connects = late_connects + VALUES(late_connects),
  machines = machines + VALUES(machines);

-- name: abandon_series(grain, form_type, all_form_types, starts_from, starts_before)
-- Per form_type and period of one grain in [starts_from, starts_before), summed over nodes: the report.
SELECT form_type, starts_at, SUM(calls) AS calls, SUM(answered) AS answered, SUM(abandoned) AS abandoned,
       SUM(late_connects) AS late_connects, SUM(machines) AS machines
FROM dialerapi_abandon_counts
WHERE grain = :grain AND (:all_form_types OR form_type = :form_type)
  AND starts_at >= :starts_from AND starts_at < :starts_before
GROUP BY form_type, starts_at
ORDER BY form_type, starts_at;

-- name: prune_abandon_counts(minutes_before, hours_before)!
-- Minute rows serve the 15-minute and 24-hour windows, hour rows the 24-hour window and the
-- report's rolling 24 hours; day rows are the compliance record and are kept.
DELETE FROM dialerapi_abandon_counts
WHERE (grain = 'm' AND starts_at < :minutes_before) OR (grain = 'h' AND starts_at < :hours_before);

-- name: abandon_windows(minute_from, today, period, other_period, other_period_forms, any_24h, day_from, edge_minute, edge_hour, edge_hour_end)
-- Each form_type's abandon counts of the last 15 minutes, today and the legal period, each
-- "answered;abandoned;late_connects;machines", the rows of each window as floor.sql due_counts
-- reads them; nothing else of the floor (rules.compliance.abandons.windows: the simulator's `abandon` pacing
-- rule reads them each minute). A form_type with no counts has no row. Minute rows
-- older than the 15 minutes are read only for the '24h' period: a '30d' period is whole days.
SELECT form_type,
  CONCAT_WS(';', SUM(IF(in_15m, answered, 0)), SUM(IF(in_15m, abandoned, 0)), SUM(IF(in_15m, late_connects, 0)),
            SUM(IF(in_15m, machines, 0))) AS window_15m,
  CONCAT_WS(';', SUM(IF(in_today, answered, 0)), SUM(IF(in_today, abandoned, 0)), SUM(IF(in_today, late_connects, 0)),
            SUM(IF(in_today, machines, 0))) AS window_today,
  CONCAT_WS(';', SUM(IF(in_period, answered, 0)), SUM(IF(in_period, abandoned, 0)),
            SUM(IF(in_period, late_connects, 0)), SUM(IF(in_period, machines, 0))) AS window_period
FROM (SELECT form_type, answered, abandoned, late_connects, machines,
             grain = 'm' AND starts_at >= :minute_from AS in_15m,
             grain = 'd' AND starts_at = :today AS in_today,
             (IF(form_type IN :other_period_forms, :other_period, :period) = '30d' AND grain = 'd'
                AND starts_at >= :day_from)
               OR (IF(form_type IN :other_period_forms, :other_period, :period) = '24h' AND grain = 'h'
                   AND starts_at > :edge_hour)
               OR (IF(form_type IN :other_period_forms, :other_period, :period) = '24h' AND grain = 'm'
                   AND starts_at >= :edge_minute AND starts_at < :edge_hour_end)
               AS in_period
      FROM dialerapi_abandon_counts
      WHERE (grain = 'm' AND starts_at >= IF(:any_24h, LEAST(:minute_from, :edge_minute), :minute_from))
         OR (grain = 'h' AND starts_at > :edge_hour) OR (grain = 'd' AND starts_at >= :day_from)) AS c
GROUP BY form_type
ORDER BY form_type;
