ALTER TABLE sales_agents DROP KEY ix_sales_agents_claimed_lead, DROP COLUMN claimed_reservation_id,
  DROP COLUMN claimed_lead_id;
