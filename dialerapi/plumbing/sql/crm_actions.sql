-- CRM after-call actions held in sales_pending_actions (lead-intake-api.md, "Pending row").

-- name: supersede_pending(oli_id)!
UPDATE sales_pending_actions SET status = 'superseded' WHERE oli_id = :oli_id AND status = 'pending';

-- name: insert_pending_action(oli_id, action, scheduled_at, reason, status, agentId, extension, callbackType, workStatus, subDisposition, remarks, created_at, applied_at, callbackAgentId)!
INSERT INTO sales_pending_actions
  (oli_id, action, scheduled_at, reason, status, agentId, extension, callbackType, workStatus,
   subDisposition, remarks, created_at, applied_at, callbackAgentId)
VALUES
  (:oli_id, :action, :scheduled_at, :reason, :status, :agentId, :extension, :callbackType, :workStatus,
   :subDisposition, :remarks, :created_at, :applied_at, :callbackAgentId);

-- name: latest_pending_action(oli_id)^
SELECT * FROM sales_pending_actions
WHERE oli_id = :oli_id AND status = 'pending'
ORDER BY id DESC
LIMIT 1
FOR UPDATE;

-- name: mark_pending_applied(id, applied_at)!
UPDATE sales_pending_actions SET status = 'applied', applied_at = :applied_at WHERE id = :id;

-- name: fail_pending(oli_id)!
UPDATE sales_pending_actions SET status = 'failed' WHERE oli_id = :oli_id AND status = 'pending';

-- name: due_pending_oli_ids(cutoff, max_rows)
-- oli_ids with a pending row old enough for the sweep, oldest first.
SELECT oli_id FROM sales_pending_actions
WHERE status = 'pending' AND created_at <= :cutoff
GROUP BY oli_id
ORDER BY MIN(id)
LIMIT :max_rows;
