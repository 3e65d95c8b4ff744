ALTER TABLE sales_master DROP KEY ix_claim_callback, DROP KEY ix_claim_retry;
ALTER TABLE sales_agents DROP COLUMN wrapup_until, DROP COLUMN ami_idle, DROP COLUMN panel_active;
