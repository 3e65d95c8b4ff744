-- Read-only summaries of a simulator run (simulate.py); its leads share an oli_id prefix.

-- name: sim_status_counts(prefix)
SELECT dial_status, COUNT(*) AS n FROM sales_master WHERE oli_id LIKE :prefix GROUP BY dial_status;

-- name: sim_attempts_per_lead(prefix)
-- Attempts come from sales_call_attempts: a CRM callback resets call_count.
SELECT attempts, COUNT(*) AS n FROM (
  SELECT m.id, COUNT(a.id) AS attempts
  FROM sales_master AS m LEFT JOIN sales_call_attempts AS a ON a.lead_id = m.id
  WHERE m.oli_id LIKE :prefix
  GROUP BY m.id
) AS per_lead
GROUP BY attempts
ORDER BY attempts;

-- name: sim_blocked_agents(low, high)$
SELECT COUNT(*) FROM sales_agents WHERE outbound_blocked = 1 AND id BETWEEN :low AND :high;
