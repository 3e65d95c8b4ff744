ALTER TABLE dialerapi_job_runs DROP COLUMN run_by, DROP COLUMN lease_until;
