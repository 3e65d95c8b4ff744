-- A job's tick is claimed by a row in dialerapi_job_runs, not by GET_LOCK: a named lock is local to
-- one Galera node, so two hosts on two nodes both won it. The claim is an UPDATE of the
-- job's row that commits; a second claimer waits on the row lock (one node) or loses certification
-- (Galera), and on its retry finds the tick taken. lease_until: wall-clock DB_TIMEZONE time until
-- which the claimer is taken to be running (cleared when it ends; a crashed run's lease runs out).
-- run_by: "hostname:pid" of the process that claimed the last tick, for the operator.
-- depends: 0009.engine-reply-keys-binary

ALTER TABLE dialerapi_job_runs
  ADD COLUMN lease_until DATETIME NULL AFTER last_finished_at,
  ADD COLUMN run_by VARCHAR(255) NULL AFTER lease_until;
