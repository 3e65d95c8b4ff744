ALTER TABLE dialerapi_abandon_counts DROP COLUMN machines;
ALTER TABLE sales_dialer_config DROP COLUMN amd_false_positive_share;
ALTER TABLE sales_master DROP KEY ix_contact_cap, DROP COLUMN contact_cap_until, DROP COLUMN contact_cap;
DROP TABLE dialerapi_outcome_retries;
DROP TABLE dialerapi_contact_capped;
DROP TABLE dialerapi_contact_numbers;
DROP TABLE dialerapi_contact_caps;
