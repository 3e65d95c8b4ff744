-- The claim (lead-intake-api.md "Claim and retry rules"). Candidates are read without locks, one
-- bucket and one form_type at a time so that each read walks an index in due order; the chosen
-- row is then locked with SKIP LOCKED, so two engines never get the same lead.

-- name: lock_agent(agent_id)^
SELECT * FROM sales_agents WHERE id = :agent_id FOR UPDATE;

-- name: agent_skills(agent_id)
SELECT form_type FROM sales_agent_skills WHERE agent_id = :agent_id ORDER BY form_type;

-- name: agent_priorities(agent_id)
SELECT priority_id FROM sales_agent_priorities WHERE agent_id = :agent_id;

-- name: due_callbacks(form_type, now, all_priorities, priorities, max_rows)
SELECT id, callback_scheduled_at AS due FROM sales_master
WHERE dial_status = 'Callback' AND isReserved = 0 AND form_type = :form_type
  AND (callback_scheduled_at IS NULL OR callback_scheduled_at <= :now)
  AND (:all_priorities OR priority_id IN :priorities)
ORDER BY callback_scheduled_at, id
LIMIT :max_rows;

-- name: due_retries(status, form_type, now, null_is_due, all_priorities, priorities, max_rows)
SELECT id, next_retry_at AS due FROM sales_master
WHERE dial_status = :status AND isReserved = 0 AND form_type = :form_type
  AND (next_retry_at <= :now OR (:null_is_due AND next_retry_at IS NULL))
  AND (:all_priorities OR priority_id IN :priorities)
ORDER BY next_retry_at, id
LIMIT :max_rows;

-- name: lock_unreserved(id)^
SELECT * FROM sales_master WHERE id = :id AND isReserved = 0 FOR UPDATE SKIP LOCKED;

-- name: lock_lead_skip_locked(oli_id)^
SELECT * FROM sales_master WHERE oli_id = :oli_id FOR UPDATE SKIP LOCKED;

-- name: agent_has_missed_activity(agent_id, oli_id)$
SELECT EXISTS (SELECT 1 FROM sales_missed_activities
               WHERE agent_id = :agent_id AND oli_id = :oli_id AND cleared_at IS NULL);

-- name: set_availability(agent_id, panel_active, ami_idle, set_wrapup, wrapup_until)!
-- NULL panel_active / ami_idle keep the current value; wrapup_until is written only with set_wrapup.
UPDATE sales_agents
SET panel_active = COALESCE(:panel_active, panel_active), ami_idle = COALESCE(:ami_idle, ami_idle),
    wrapup_until = IF(:set_wrapup, :wrapup_until, wrapup_until)
WHERE id = :agent_id;

-- name: available_agents()
-- Agents who could take a call if nothing else is known about the time (the caller checks wrap-up).
SELECT a.*, GROUP_CONCAT(s.form_type SEPARATOR ';') AS skills
FROM sales_agents AS a
JOIN sales_agent_skills AS s ON s.agent_id = a.id
WHERE a.panel_active = 1 AND a.pause_code IS NULL AND a.ami_idle = 1
GROUP BY a.id
ORDER BY a.id;

-- name: lead_exists(oli_id)$
SELECT EXISTS (SELECT 1 FROM sales_master WHERE oli_id = :oli_id);
