ALTER TABLE sales_dialer_config
  DROP COLUMN abandon_connect_seconds, DROP COLUMN abandon_min_answered, DROP COLUMN abandon_period,
  DROP COLUMN abandon_limit, DROP COLUMN enforce_abandon_limit;
DROP TABLE dialerapi_abandon_counts;
ALTER TABLE sales_master DROP COLUMN predictive_call, DROP COLUMN agent_connected_at, DROP COLUMN call_answered_at;
ALTER TABLE sales_call_attempts
  DROP KEY ix_sales_call_attempts_ended, DROP COLUMN late_connect, DROP COLUMN connect_seconds,
  DROP COLUMN agent_connected_at, DROP COLUMN answered_at, DROP COLUMN reservation_id, DROP COLUMN form_type;
