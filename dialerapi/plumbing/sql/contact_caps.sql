-- Contact caps per phone number (rules.compliance.contact_caps). Callers own the transaction.

-- name: contact_caps()
SELECT name, max_attempts, window_seconds, region, form_type, enabled, preset, source, consent_days
FROM dialerapi_contact_caps ORDER BY name;

-- name: set_contact_cap_enabled(name, enabled)!
UPDATE dialerapi_contact_caps SET enabled = :enabled WHERE name = :name;

-- name: add_contact_cap(name, max_attempts, window_seconds, region, form_type, enabled, consent_days)!
INSERT INTO dialerapi_contact_caps (name, max_attempts, window_seconds, region, form_type, enabled, preset, consent_days)
VALUES (:name, :max_attempts, :window_seconds, :region, :form_type, :enabled, 0, :consent_days);

-- name: remove_contact_cap(name)!
DELETE FROM dialerapi_contact_caps WHERE name = :name AND preset = 0;

-- name: contact_number(phone_e164)^
-- A number's attempts and version, for a claim whose lock query did not read them (its stored
-- phone_e164 was corrected) and for an originate failure, which takes its attempt back.
SELECT version, attempts, consents FROM dialerapi_contact_numbers WHERE phone_e164 = :phone_e164;

-- name: add_contact_number(phone_e164, attempts, consents, last_at_utc)!
-- The number's first recorded attempt; 0 rows when another claim added it first (run again).
INSERT IGNORE INTO dialerapi_contact_numbers (phone_e164, version, attempts, consents, last_at_utc)
VALUES (:phone_e164, 1, :attempts, :consents, :last_at_utc);

-- name: write_contact_number(phone_e164, version, attempts, consents, last_at_utc)!
-- The number's attempts (and those made with consent), written only over the version the claim
-- read; 0 rows when another claim wrote it since (run again). On two Galera nodes the two writes
-- fail certification instead.
UPDATE dialerapi_contact_numbers
SET version = version + 1, attempts = :attempts, consents = :consents, last_at_utc = :last_at_utc
WHERE phone_e164 = :phone_e164 AND version = :version;

-- name: hold_for_cap(id, cap, until)!
-- The lead's number is at `cap` until `until`: the claim passes it over and it is due again then.
-- A callback keeps its own time when that is later.
UPDATE sales_master
SET next_retry_at = :until,
    callback_scheduled_at = IF(dial_status = 'Callback' AND (callback_scheduled_at IS NULL OR callback_scheduled_at < :until),
                               :until, callback_scheduled_at),
    contact_cap = :cap, contact_cap_until = :until
WHERE id = :id;

-- name: lock_cap_held(phone_e164, now)
-- The number's leads still held by a cap (due at the moment the cap frees them: no push or CRM
-- action has moved them since), locked, with the cap (invisible columns): an attempt of the number
-- was given back. ix_sales_master_phone_e164.
SELECT m.*, m.callback_agent_id, m.contact_cap, m.contact_cap_until FROM sales_master AS m
WHERE m.phone_e164 = :phone_e164 AND m.isReserved = 0 AND m.contact_cap_until > :now
  AND IF(m.dial_status = 'Callback', m.callback_scheduled_at, m.next_retry_at) = m.contact_cap_until
ORDER BY m.id FOR UPDATE;

-- name: end_cap_holds(ids, now)!
-- Those leads are due again at :now, and the next claim checks the caps again. A held lead was due
-- when it was held, so :now is no earlier than the time the hold moved.
UPDATE sales_master
SET next_retry_at = :now, callback_scheduled_at = IF(dial_status = 'Callback', :now, callback_scheduled_at),
    contact_cap = NULL, contact_cap_until = NULL
WHERE id IN :ids;

-- name: note_capped(day, cap, phone_e164, form_type, at_utc)!
INSERT INTO dialerapi_contact_capped (day, cap, phone_e164, form_type, first_at_utc)
VALUES (:day, :cap, :phone_e164, :form_type, :at_utc)
ON DUPLICATE KEY UPDATE leads_held = leads_held + 1;

-- name: leads_waiting_on_caps(now)
-- Per form_type, the leads waiting on a cap: not reserved, still due at the moment the cap frees
-- them (a push or a CRM action since has moved them on). A range of ix_contact_cap.
SELECT form_type, COUNT(*) AS waiting
FROM sales_master FORCE INDEX (ix_contact_cap)
WHERE contact_cap_until > :now AND isReserved = 0
  AND IF(dial_status = 'Callback', callback_scheduled_at, next_retry_at) = contact_cap_until
  AND dial_status IN ('Pending', 'Callback', 'Abandoned', 'Not Connected')
GROUP BY form_type ORDER BY form_type;

-- name: capped_report(day_from, day_to)
SELECT day, cap, form_type, COUNT(*) AS numbers, SUM(leads_held) AS leads_held
FROM dialerapi_contact_capped
WHERE day BETWEEN :day_from AND :day_to
GROUP BY day, cap, form_type ORDER BY day, cap, form_type;

-- name: prune_contact_numbers(before_utc, max_rows)!
-- Numbers with no attempt inside any window a cap can have.
DELETE FROM dialerapi_contact_numbers WHERE last_at_utc < :before_utc ORDER BY last_at_utc LIMIT :max_rows;

-- Retries per outcome (rules.leads.outcome_retries); the settle reads them with the config
-- (config.sql get_dialer_config).
