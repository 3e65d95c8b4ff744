-- Reads and writes of a lead's dial state (rules.leads.dialstate). Callers own the transaction.

-- name: lock_lead(oli_id)^
-- With the invisible facts of the call in progress (migration 0014), which settle records and
-- clears, the owner of its callback (migration 0015), and its consent (migration 0025), which
-- lead.call_ended carries, and the caller ID its call presents (migration 0027).
SELECT *, call_answered_at, agent_connected_at, predictive_call, callback_agent_id, consent_type, consent_at,
       consent_source, caller_id
FROM sales_master WHERE oli_id = :oli_id FOR UPDATE;

-- name: write_dial_state(id, data_id, priority_id, dial_status, previous_dial_status, disposeRemark, last_dial_result, hangup_by, hangup_cause, last_attempt_at, first_attempt_at, next_retry_at, callback_scheduled_at, call_count, isReserved, reservation_id, reserved_at, updated_at, set_owner, callback_agent_id, forget_call_moments, set_caller_id, caller_id)!
-- callback_agent_id is written only with :set_owner, and caller_id (the number a claim presents)
-- only with :set_caller_id, kept otherwise. :forget_call_moments
-- (the end of a call, abandons.end_of_call) clears the call's answer and connect moments.
UPDATE sales_master
SET data_id = :data_id, priority_id = :priority_id, dial_status = :dial_status,
    previous_dial_status = :previous_dial_status, disposeRemark = :disposeRemark,
    last_dial_result = :last_dial_result, hangup_by = :hangup_by, hangup_cause = :hangup_cause,
    last_attempt_at = :last_attempt_at, first_attempt_at = :first_attempt_at,
    next_retry_at = :next_retry_at, callback_scheduled_at = :callback_scheduled_at,
    call_count = :call_count, isReserved = :isReserved, reservation_id = :reservation_id,
    reserved_at = :reserved_at, updated_at = :updated_at,
    callback_agent_id = IF(:set_owner, :callback_agent_id, callback_agent_id),
    caller_id = IF(:set_caller_id, :caller_id, caller_id),
    call_answered_at = IF(:forget_call_moments, NULL, call_answered_at),
    agent_connected_at = IF(:forget_call_moments, NULL, agent_connected_at),
    predictive_call = IF(:forget_call_moments, 0, predictive_call)
WHERE id = :id;

-- name: insert_call_attempt(lead_id, oli_id, agent_id, call_type, started_at, ended_at, result, hangup_by, hangup_cause, form_type, reservation_id, answered_at, agent_connected_at, connect_seconds, late_connect, caller_id)!
INSERT INTO sales_call_attempts
  (lead_id, oli_id, agent_id, call_type, started_at, ended_at, result, hangup_by, hangup_cause, form_type,
   reservation_id, answered_at, agent_connected_at, connect_seconds, late_connect, caller_id)
VALUES
  (:lead_id, :oli_id, :agent_id, :call_type, :started_at, :ended_at, :result, :hangup_by, :hangup_cause, :form_type,
   :reservation_id, :answered_at, :agent_connected_at, :connect_seconds, :late_connect, :caller_id);

-- name: end_missed_activities(lead_id, agent_id, ended_at, due_at, ended_at_utc, due_at_utc)!
-- The call is over: the agent's open missed activity for it starts its grace window.
UPDATE sales_missed_activities
SET ended_at = :ended_at, due_at = :due_at, ended_at_utc = :ended_at_utc, due_at_utc = :due_at_utc
WHERE lead_id = :lead_id AND ended_at IS NULL AND cleared_at IS NULL
  AND (:agent_id IS NULL OR agent_id = :agent_id);

-- name: clear_missed_activities(oli_id, cleared_at, cleared_by)!
UPDATE sales_missed_activities
SET cleared_at = :cleared_at, cleared_by = :cleared_by
WHERE oli_id = :oli_id AND cleared_at IS NULL;

-- name: agent_exists(agent_id)$
SELECT EXISTS (SELECT 1 FROM sales_agents WHERE id = :agent_id);

-- name: reservations_before(before)
-- Live reservations made at or before a wall-clock time (the lease); the caller checks the exact instant.
SELECT oli_id, reservation_id, reserved_at FROM sales_master
WHERE dial_status = 'Calling' AND isReserved = 1 AND reserved_at <= :before
ORDER BY reserved_at, id;

-- name: live_reservations()^
-- Every live row, those without reserved_at (reserved in SQL by an engine: no lease), and the
-- oldest reserved_at.
SELECT COUNT(*) AS live, COALESCE(SUM(reserved_at IS NULL), 0) AS without_lease, MIN(reserved_at) AS oldest
FROM sales_master WHERE dial_status = 'Calling' AND isReserved = 1;

-- name: outcome_attempts(lead_id, result, since)$
-- The lead's attempts with one result since its cycle began (its first_attempt_at; a push or a
-- callback starts a new cycle): an outcome's maximum of attempts. ix_sales_call_attempts_lead.
SELECT COUNT(*) FROM sales_call_attempts WHERE lead_id = :lead_id AND result = :result AND ended_at >= :since;
