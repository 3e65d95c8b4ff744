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

-- name: lease(name)^
-- A lease of dialerapi_job_runs (the webhook dispatcher's): who holds it, until when (UTC).
SELECT run_by, lease_until FROM dialerapi_job_runs WHERE name = :name;

-- name: node_state()^
-- Whether this is a Galera node and whether it takes work now (docs/operations/galera.md "Scale out").
SELECT @@global.wsrep_on AS wsrep_on,
  (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'WSREP_READY') AS wsrep_ready,
  (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS
    WHERE VARIABLE_NAME = 'WSREP_LOCAL_STATE_COMMENT') AS wsrep_local_state_comment,
  (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'WSREP_CLUSTER_SIZE')
    AS wsrep_cluster_size;

-- name: wait_for_causality()!
-- Causal reads: BEGIN and SELECT wait until this node has applied what the cluster committed before.
SET SESSION wsrep_sync_wait = 1;
