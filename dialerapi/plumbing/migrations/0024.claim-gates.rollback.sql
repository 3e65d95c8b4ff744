ALTER TABLE sales_master DROP FOREIGN KEY fk_sales_master_claim_gate;
ALTER TABLE sales_master DROP KEY ix_sales_master_claim_gate, DROP COLUMN claim_gate;
DROP TABLE dialerapi_claim_gates;
