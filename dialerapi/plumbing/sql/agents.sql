-- Agents: the roster (sales_agents, skills, allowed priorities), missed activities and blocking
-- (lead-intake-api.md "Missed activity", "Claim and retry rules" 6; decisions.md D7).

-- name: get_agent(agent_id)^
SELECT id, extension, name, outbound_blocked, pause_code, reason_note FROM sales_agents WHERE id = :agent_id;

-- name: get_agent_by_extension(extension)^
SELECT id, extension, name, outbound_blocked, pause_code, reason_note FROM sales_agents WHERE extension = :extension;

-- name: list_agents()
SELECT a.id, a.extension, a.name, a.outbound_blocked, a.pause_code, a.reason_note,
       (SELECT GROUP_CONCAT(s.form_type ORDER BY s.form_type SEPARATOR ';')
          FROM sales_agent_skills AS s WHERE s.agent_id = a.id) AS skills,
       (SELECT GROUP_CONCAT(p.priority_id ORDER BY p.priority_id SEPARATOR ';')
          FROM sales_agent_priorities AS p WHERE p.agent_id = a.id) AS priorities
FROM sales_agents AS a
ORDER BY a.id;

-- name: upsert_agent(agent_id, extension, name)!
INSERT INTO sales_agents (id, extension, name) VALUES (:agent_id, :extension, :name)
ON DUPLICATE KEY UPDATE extension = VALUES(extension), name = VALUES(name);

-- name: delete_agent(agent_id)!
DELETE FROM sales_agents WHERE id = :agent_id;

-- name: delete_agent_skills(agent_id)!
DELETE FROM sales_agent_skills WHERE agent_id = :agent_id;

-- name: insert_agent_skills*!
INSERT INTO sales_agent_skills (agent_id, form_type) VALUES (:agent_id, :form_type);

-- name: delete_agent_priorities(agent_id)!
DELETE FROM sales_agent_priorities WHERE agent_id = :agent_id;

-- name: insert_agent_priorities*!
INSERT INTO sales_agent_priorities (agent_id, priority_id) VALUES (:agent_id, :priority_id);

-- name: insert_missed_activity(agent_id, lead_id, oli_id, call_type, extension, connected_at, connected_at_utc)!
INSERT INTO sales_missed_activities
  (agent_id, lead_id, oli_id, call_type, extension, connected_at, connected_at_utc)
VALUES (:agent_id, :lead_id, :oli_id, :call_type, :extension, :connected_at, :connected_at_utc);

-- name: open_missed_activities(agent_id, max_items)
-- Every uncleared activity of the agent, oldest first (D7).
SELECT id, oli_id, lead_id, call_type, extension, connected_at, ended_at, due_at,
       connected_at_utc, ended_at_utc, due_at_utc
FROM sales_missed_activities
WHERE agent_id = :agent_id AND cleared_at IS NULL
ORDER BY connected_at, id
LIMIT :max_items;

-- name: agent_has_overdue(agent_id, now, now_utc)$
-- Overdue (D7) compares the exact UTC instant; a row written without it (by an engine writing SQL
-- directly, or before migration 0006) falls back to its wall-clock due_at.
SELECT EXISTS (
  SELECT 1 FROM sales_missed_activities
  WHERE agent_id = :agent_id AND cleared_at IS NULL
    AND (due_at_utc < :now_utc OR (due_at_utc IS NULL AND due_at < :now))
);

-- name: agents_with_open_activities(oli_id)
SELECT DISTINCT agent_id FROM sales_missed_activities WHERE oli_id = :oli_id AND cleared_at IS NULL;

-- name: agents_whose_block_changed(now, now_utc, all_agents, agent_ids)
-- Agents (all, or those of agent_ids) whose outbound_blocked flag disagrees with "has an uncleared
-- overdue activity". A plain read: locking it would lock the missed activities its subquery reads,
-- which deadlocks with settle.
SELECT a.id, NOT a.outbound_blocked AS blocked
FROM sales_agents AS a
WHERE (:all_agents OR a.id IN :agent_ids)
  AND a.outbound_blocked <> EXISTS (
  SELECT 1 FROM sales_missed_activities AS m
  WHERE m.agent_id = a.id AND m.cleared_at IS NULL
    AND (m.due_at_utc < :now_utc OR (m.due_at_utc IS NULL AND m.due_at < :now))
)
ORDER BY a.id;

-- name: set_outbound_blocked(agent_id, blocked)!
-- Changes the flag only if it is not already so: the row count says whether this transaction did it.
UPDATE sales_agents SET outbound_blocked = :blocked WHERE id = :agent_id AND outbound_blocked <> :blocked;

-- name: set_pause(agent_id, pause_code, reason_note)!
UPDATE sales_agents SET pause_code = :pause_code, reason_note = :reason_note WHERE id = :agent_id;

-- name: insert_outbox*!
INSERT INTO dialerapi_outbox (agent_id, created_at) VALUES (:agent_id, :created_at);

-- name: outbox_after(last_id, max_rows)
SELECT id, agent_id FROM dialerapi_outbox WHERE id > :last_id ORDER BY id LIMIT :max_rows;

-- name: outbox_between(after, upto)
-- The window events.OutboxTail reads again for rows that committed after a higher id was read.
SELECT id, agent_id FROM dialerapi_outbox WHERE id > :after AND id <= :upto;

-- name: outbox_last_id()$
SELECT COALESCE(MAX(id), 0) FROM dialerapi_outbox;

-- name: prune_outbox(before)!
DELETE FROM dialerapi_outbox WHERE created_at < :before;

-- name: get_pause_reason(code)^
SELECT code, kind, needs_note FROM sales_pause_reasons WHERE code = :code;

-- name: agents_claiming(lead_id, reservation_id)
-- The agents a live call of the lead was claimed for (ix_sales_agents_claimed_lead); read without
-- a lock, so the end of a call never waits on an agent's row.
SELECT id AS agent_id FROM sales_agents WHERE claimed_lead_id = :lead_id AND claimed_reservation_id = :reservation_id;
