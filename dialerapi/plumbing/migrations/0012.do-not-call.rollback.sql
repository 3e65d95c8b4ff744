ALTER TABLE sales_dialer_config
  DROP COLUMN dnc_allow_inbound, DROP COLUMN dnd_reasons, DROP COLUMN phone_default_region,
  DROP COLUMN calling_window_end, DROP COLUMN calling_window_start, DROP COLUMN obey_calling_window;
ALTER TABLE sales_master
  ADD KEY ix_claim_retry (dial_status, isReserved, form_type, next_retry_at),
  ADD KEY ix_claim_callback (dial_status, isReserved, form_type, callback_scheduled_at);
ALTER TABLE sales_master
  DROP KEY ix_claim_callback_v2, DROP KEY ix_claim_retry_v2, DROP KEY ix_sales_master_phone_e164,
  DROP COLUMN call_zone_id, DROP COLUMN do_not_call, DROP COLUMN phone_e164;
DROP TABLE dialerapi_call_zones;
DROP TABLE dialerapi_counters;
DROP TABLE dialerapi_dnc;
