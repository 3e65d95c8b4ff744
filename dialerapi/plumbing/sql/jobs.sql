-- Cluster-wide job coordination (decisions.md D6): a job's tick is claimed by updating
-- its row in dialerapi_job_runs inside a transaction; the commit decides, on one node as on Galera.

-- name: lock_job_run(name)^
SELECT last_started_at, lease_until FROM dialerapi_job_runs WHERE name = :name FOR UPDATE;

-- name: insert_job_run(name, started_at, lease_until, run_by)!
INSERT INTO dialerapi_job_runs (name, last_started_at, lease_until, run_by)
VALUES (:name, :started_at, :lease_until, :run_by);

-- name: claim_job_run(name, started_at, lease_until, run_by)!
UPDATE dialerapi_job_runs SET last_started_at = :started_at, lease_until = :lease_until, run_by = :run_by
WHERE name = :name;

-- name: end_job_run(name, run_by, finished_at, result)!
UPDATE dialerapi_job_runs SET last_finished_at = :finished_at, last_result = :result, lease_until = NULL
WHERE name = :name AND run_by = :run_by;

-- name: release_job_run(name, run_by)!
UPDATE dialerapi_job_runs SET lease_until = NULL WHERE name = :name AND run_by = :run_by;
