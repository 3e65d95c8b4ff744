DROP TABLE dialerapi_restrictions;
DROP TABLE dialerapi_calling_rules;
ALTER TABLE sales_master DROP COLUMN consent_source, DROP COLUMN consent_at, DROP COLUMN consent_type,
  DROP COLUMN postal_code, DROP COLUMN region;
