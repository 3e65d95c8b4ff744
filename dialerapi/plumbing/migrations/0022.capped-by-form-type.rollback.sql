CREATE TABLE dialerapi_contact_capped_rollback LIKE dialerapi_contact_capped;
ALTER TABLE dialerapi_contact_capped_rollback DROP PRIMARY KEY, ADD PRIMARY KEY (day, cap, phone_e164);
INSERT INTO dialerapi_contact_capped_rollback (day, cap, phone_e164, form_type, first_at_utc, leads_held)
SELECT day, cap, phone_e164, MIN(form_type), MIN(first_at_utc), SUM(leads_held)
FROM dialerapi_contact_capped GROUP BY day, cap, phone_e164;
DROP TABLE dialerapi_contact_capped;
RENAME TABLE dialerapi_contact_capped_rollback TO dialerapi_contact_capped;
