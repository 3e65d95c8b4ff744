-- Cluster-wide job coordination (decisions.md D6): a named MySQL lock plus the time of the last run.

-- name: try_job_lock(name)$
SELECT GET_LOCK(:name, 0);

-- name: release_job_lock(name)$
SELECT RELEASE_LOCK(:name);

-- name: job_last_started(name)$
SELECT last_started_at FROM dialerapi_job_runs WHERE name = :name;

-- name: record_job_start(name, started_at)!
INSERT INTO dialerapi_job_runs (name, last_started_at) VALUES (:name, :started_at)
ON DUPLICATE KEY UPDATE last_started_at = VALUES(last_started_at);

-- name: record_job_end(name, finished_at, result)!
UPDATE dialerapi_job_runs SET last_finished_at = :finished_at, last_result = :result WHERE name = :name;
