-- The claim (lead-intake-api.md "Claim and retry rules"): agent availability, and indexes that
-- serve each claim bucket by (dial_status, isReserved, form_type, due time).
-- Presence "ready" is sales_agents.pause_code IS NULL.
-- depends: 0003.agent-events

ALTER TABLE sales_agents
  ADD COLUMN panel_active TINYINT(1) NOT NULL DEFAULT 0,
  ADD COLUMN ami_idle TINYINT(1) NOT NULL DEFAULT 1,
  ADD COLUMN wrapup_until DATETIME NULL;

ALTER TABLE sales_master
  ADD KEY ix_claim_retry (dial_status, isReserved, form_type, next_retry_at),
  ADD KEY ix_claim_callback (dial_status, isReserved, form_type, callback_scheduled_at);
