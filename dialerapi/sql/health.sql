-- name: ping()$
SELECT 1;

-- name: pending_actions_by_status()
SELECT status, COUNT(*) AS n FROM sales_pending_actions GROUP BY status;

-- name: count_open_missed_activities()$
SELECT COUNT(*) FROM sales_missed_activities WHERE cleared_at IS NULL;

-- name: count_blocked_agents()$
SELECT COUNT(*) FROM sales_agents WHERE outbound_blocked = 1;

-- name: job_run(name)^
SELECT last_started_at, last_finished_at, last_result FROM dialerapi_job_runs WHERE name = :name;
