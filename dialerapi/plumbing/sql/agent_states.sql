-- Agent state history (migration 0018): rules.agents.state_history.

-- name: record_states(agent_ids, at_utc)!
-- A row for each of :agent_ids whose availability columns differ from their last row (or who has
-- none), copied from sales_agents as this transaction sees it. The caller changed the agent row in
-- this transaction, so it holds the row's lock: two changes of one agent never interleave here.
-- "Last" is by moment, then id; ids are not in commit order across Galera nodes, but the agent's
-- lock orders its rows, and two of one second differ by no time at all.
INSERT INTO dialerapi_agent_states (agent_id, at_utc, panel_active, pause_code, ami_idle, wrapup_until, outbound_blocked)
SELECT a.id, :at_utc, a.panel_active, a.pause_code, a.ami_idle, a.wrapup_until, a.outbound_blocked
FROM sales_agents AS a
LEFT JOIN dialerapi_agent_states AS s
  ON s.id = (SELECT x.id FROM dialerapi_agent_states AS x WHERE x.agent_id = a.id
             ORDER BY x.at_utc DESC, x.id DESC LIMIT 1)
WHERE a.id IN :agent_ids
  AND NOT (s.panel_active <=> a.panel_active AND s.pause_code <=> a.pause_code AND s.ami_idle <=> a.ami_idle
           AND s.wrapup_until <=> a.wrapup_until AND s.outbound_blocked <=> a.outbound_blocked);

-- name: states_after(last_id, max_rows)
-- The board's tail of the history (events.OutboxTail, as for dialerapi_outbox): rows above an id.
SELECT id, agent_id FROM dialerapi_agent_states WHERE id > :last_id ORDER BY id LIMIT :max_rows;

-- name: states_between(after, upto)
SELECT id, agent_id FROM dialerapi_agent_states WHERE id > :after AND id <= :upto;

-- name: states_last_id()$
SELECT COALESCE(MAX(id), 0) FROM dialerapi_agent_states;

-- name: board_agents(all_agents, agent_ids)
-- The board's row of every agent (:all_agents) or of :agent_ids: the availability columns, since
-- when the state they show stands and the form_type of the call the agent is on (an open missed
-- activity: the call connected and has not ended), else of the call claimed for the agent while
-- its reservation is live (it rings: migration 0021). Today's calls and talk time come from the
-- report (rules.agents.state_history.days_report).
-- `since_utc` is the moment of the first history row after the last one whose state differs from
-- the agent's now (`boundary`, "at_utc#id"), or of the agent's first row when none differs, so a
-- row changing what the state does not show (the AMI, or the outbound block while paused) does not
-- restart the time in state nor delay the pause alert. A row's state here is its panel, else
-- its pause code, else its AMI, else idle with its outbound block and its wrap-up's end (a new
-- wrap-up is a new state; rules.agents.state_history.board_rows starts free at a wrap-up's end). Each read
-- is a few entries of ix_agent_states_agent: backward to the first differing row, forward to the
-- next row.
SELECT t.agent_id, t.name, t.extension, t.panel_active, t.pause_code, t.reason_note, t.ami_idle, t.wrapup_until,
       t.outbound_blocked, t.skills, t.call_form_type,
       IF(t.boundary IS NULL,
          (SELECT MIN(x.at_utc) FROM dialerapi_agent_states AS x WHERE x.agent_id = t.agent_id),
          COALESCE((SELECT y.at_utc FROM dialerapi_agent_states AS y
                    WHERE y.agent_id = t.agent_id
                      AND y.at_utc >= CAST(SUBSTRING_INDEX(t.boundary, '#', 1) AS DATETIME)
                      AND (y.at_utc > CAST(SUBSTRING_INDEX(t.boundary, '#', 1) AS DATETIME)
                           OR y.id > CAST(SUBSTRING_INDEX(t.boundary, '#', -1) AS UNSIGNED))
                    ORDER BY y.at_utc, y.id LIMIT 1),
                   t.last_at)) AS since_utc
FROM (
  SELECT a.id AS agent_id, a.name, a.extension, a.panel_active, a.pause_code, a.reason_note, a.ami_idle,
         a.wrapup_until, a.outbound_blocked,
         (SELECT GROUP_CONCAT(k.form_type ORDER BY k.form_type SEPARATOR ';')
            FROM sales_agent_skills AS k WHERE k.agent_id = a.id) AS skills,
         COALESCE((SELECT m.form_type FROM sales_missed_activities AS c JOIN sales_master AS m ON m.id = c.lead_id
                   WHERE c.agent_id = a.id AND c.cleared_at IS NULL AND c.ended_at IS NULL
                   ORDER BY c.connected_at DESC, c.id DESC LIMIT 1),
                  (SELECT r.form_type FROM sales_master AS r
                   WHERE r.id = a.claimed_lead_id AND r.isReserved = 1
                     AND r.reservation_id = a.claimed_reservation_id)) AS call_form_type,
         (SELECT x.at_utc FROM dialerapi_agent_states AS x WHERE x.agent_id = a.id
          ORDER BY x.at_utc DESC, x.id DESC LIMIT 1) AS last_at,
         (SELECT CONCAT(z.at_utc, '#', z.id) FROM dialerapi_agent_states AS z
          WHERE z.agent_id = a.id
            AND CASE WHEN z.panel_active = 0 THEN 'i'
                     WHEN COALESCE(z.pause_code, '') <> '' THEN CONCAT('p', z.pause_code)
                     WHEN z.ami_idle = 0 THEN 'b'
                     ELSE CONCAT('f', z.outbound_blocked, '|', COALESCE(z.wrapup_until, '')) END
             <> CASE WHEN a.panel_active = 0 THEN 'i'
                     WHEN COALESCE(a.pause_code, '') <> '' THEN CONCAT('p', a.pause_code)
                     WHEN a.ami_idle = 0 THEN 'b'
                     ELSE CONCAT('f', a.outbound_blocked, '|', COALESCE(a.wrapup_until, '')) END
          ORDER BY z.at_utc DESC, z.id DESC LIMIT 1) AS boundary
  FROM sales_agents AS a
  WHERE :all_agents OR a.id IN :agent_ids
) AS t
ORDER BY t.agent_id;

-- name: state_rows(all_agents, agent_ids, from_utc, to_utc)
-- Each agent's history rows from :from_utc (exclusive of earlier ones, but with the last row before
-- it: the state the range starts in) to before :to_utc, in order per agent, with `ends_utc` (the
-- next row's moment, NULL for the agent's last). One index range per agent (ix_agent_states_agent).
SELECT r.agent_id, r.at_utc, r.panel_active, r.pause_code, r.ami_idle, r.wrapup_until, r.outbound_blocked,
       LEAD(r.at_utc) OVER (PARTITION BY r.agent_id ORDER BY r.at_utc, r.id) AS ends_utc
FROM (
  SELECT s.* FROM dialerapi_agent_states AS s
  WHERE s.at_utc >= :from_utc AND s.at_utc < :to_utc AND (:all_agents OR s.agent_id IN :agent_ids)
  UNION ALL
  SELECT s.* FROM dialerapi_agent_states AS s
  JOIN (SELECT DISTINCT agent_id FROM dialerapi_agent_states
        WHERE (:all_agents OR agent_id IN :agent_ids)) AS g
    ON s.id = (SELECT x.id FROM dialerapi_agent_states AS x
               WHERE x.agent_id = g.agent_id AND x.at_utc < :from_utc
               ORDER BY x.at_utc DESC, x.id DESC LIMIT 1)
) AS r
ORDER BY r.agent_id, r.at_utc, r.id;

-- name: answered_calls(all_agents, agent_ids, from_wall, to_wall)
-- Calls that connected to an agent (a missed activity opens when a call is bridged), per agent and
-- wall-clock day (DB_TIMEZONE), from :from_wall to before :to_wall.
SELECT agent_id, DATE(connected_at) AS day, COUNT(*) AS answered
FROM sales_missed_activities
WHERE connected_at >= :from_wall AND connected_at < :to_wall AND (:all_agents OR agent_id IN :agent_ids)
GROUP BY agent_id, DATE(connected_at);

-- name: prune_agent_states(before, max_rows)!
-- Rows older than :before, except each agent's last one before it: the state a report from the
-- cut-off starts in (or the one the agent is in still).
DELETE FROM dialerapi_agent_states
WHERE at_utc < :before
  AND EXISTS (SELECT 1 FROM dialerapi_agent_states AS n
              WHERE n.agent_id = dialerapi_agent_states.agent_id AND n.at_utc < :before
                AND (n.at_utc > dialerapi_agent_states.at_utc
                     OR (n.at_utc = dialerapi_agent_states.at_utc AND n.id > dialerapi_agent_states.id)))
ORDER BY at_utc
LIMIT :max_rows;

-- name: upsert_agent_day(agent_id, day, report, rolled_to_utc)!
INSERT INTO dialerapi_agent_days (agent_id, day, report, rolled_to_utc)
VALUES (:agent_id, :day, :report, :rolled_to_utc)
ON DUPLICATE KEY UPDATE report = VALUES(report), rolled_to_utc = VALUES(rolled_to_utc);

-- name: agent_days(first_day, last_day, all_agents, agent_ids)
SELECT agent_id, day, report FROM dialerapi_agent_days
WHERE day >= :first_day AND day <= :last_day AND (:all_agents OR agent_id IN :agent_ids)
ORDER BY agent_id, day;

-- name: rolled_days(first_day, last_day)
-- The days of the range with a roll-up, each with the moment it reaches (a day is rolled up for
-- every agent at once: the least of its rows').
SELECT day, MIN(rolled_to_utc) AS rolled_to_utc FROM dialerapi_agent_days
WHERE day >= :first_day AND day <= :last_day GROUP BY day;

-- name: first_state_at()$
SELECT MIN(at_utc) FROM dialerapi_agent_states;

-- name: prune_agent_days(before, max_rows)!
DELETE FROM dialerapi_agent_days WHERE day < :before LIMIT :max_rows;
