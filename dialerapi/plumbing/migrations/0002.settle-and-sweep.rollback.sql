DROP TABLE dialerapi_job_runs;
ALTER TABLE sales_master DROP COLUMN previous_dial_status;
