ALTER TABLE sales_call_attempts DROP COLUMN caller_id;
ALTER TABLE sales_master DROP COLUMN caller_id;
ALTER TABLE sales_dialer_config DROP COLUMN caller_id_headroom_share, DROP COLUMN caller_id_default_pool,
  DROP COLUMN caller_id_daily_cap;
DROP TABLE dialerapi_caller_id_changes;
DROP TABLE dialerapi_caller_id_pools;
DROP TABLE dialerapi_caller_ids;
