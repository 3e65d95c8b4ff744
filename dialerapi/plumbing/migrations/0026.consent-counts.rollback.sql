DROP TABLE dialerapi_held_counts;
ALTER TABLE dialerapi_contact_numbers DROP COLUMN consents;
ALTER TABLE dialerapi_contact_caps DROP COLUMN consent_days;
