-- Settle and sweep (decisions.md D6).
-- previous_dial_status: the status a claim took the lead from, restored when the originate fails.
-- dialerapi_job_runs: when each cluster-wide job last ran, so that one tick runs once across
-- every worker and host, and health can report the last sweep.
-- depends: 0001.schema

ALTER TABLE sales_master ADD COLUMN previous_dial_status VARCHAR(20) NULL AFTER dial_status;

CREATE TABLE dialerapi_job_runs (
  name VARCHAR(64) NOT NULL PRIMARY KEY,
  last_started_at DATETIME NOT NULL,
  last_finished_at DATETIME NULL,
  last_result VARCHAR(255) NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
