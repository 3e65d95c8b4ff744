ALTER TABLE sales_master DROP KEY ix_claim_zone, DROP KEY ix_claim_due, DROP COLUMN claim_due, DROP COLUMN claim_bucket;
