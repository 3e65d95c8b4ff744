ALTER TABLE sales_dialer_config DROP COLUMN personal_callback_fallback_minutes;
ALTER TABLE sales_pending_actions DROP COLUMN callbackAgentId;
ALTER TABLE sales_master DROP KEY ix_callback_agent, DROP COLUMN callback_agent_id;
