-- Consent in the contact caps' count, and the leads each rule holds per campaign.
--
-- dialerapi_contact_caps.consent_days: a cap that leaves consented calls out of its count
--   (Regulation F, 12 CFR 1006.14(b)(3)(i) and (b)(4)): a call to a lead with written or express
--   consent given in the `consent_days` days before it is neither held nor counted by this cap.
--   NULL: every call counts. The shipped reg-f-7-in-7 preset gets 7.
-- dialerapi_contact_numbers.consents: {reservation_id: the consent's instant (epoch seconds UTC)}
--   of the number's attempts made with consent, beside `attempts`, whose [epoch, form_type,
--   reservation_id] entries keep their shape: the previous release reads and writes them as before
--   (it leaves this column alone and counts every attempt, as it always did).
-- dialerapi_held_counts: the unreserved leads each rule holds back now, per form_type and reason
--   (rules.compliance.claim_checks.held_leads), counted once a minute by one process (upkeep.jobs) so that
--   /engine/floor and the supervisor board read a few rows, never the whole floor.
-- Expand only: the previous release names none of them.
-- depends: 0025.calling-rules

ALTER TABLE dialerapi_contact_caps ADD COLUMN consent_days INT NULL;

UPDATE dialerapi_contact_caps SET consent_days = 7 WHERE name = 'reg-f-7-in-7' AND preset = 1;

ALTER TABLE dialerapi_contact_numbers ADD COLUMN consents MEDIUMTEXT NULL;

CREATE TABLE dialerapi_held_counts (
  form_type VARCHAR(64) NOT NULL,
  reason VARCHAR(32) CHARACTER SET ascii NOT NULL,
  leads INT NOT NULL,
  counted_at_utc DATETIME NOT NULL,
  PRIMARY KEY (form_type, reason)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
