-- What a claim checks of a lead's phone (rules.compliance.claim_checks): the do-not-call list,
-- the calling profile (call zones) a push works out, and the held leads counted once a minute.
-- Numbers are E.164 digits (rules.compliance.phones). Callers own the transaction.

-- name: listed_numbers(phones)
-- Which of these numbers are listed.
SELECT phone FROM dialerapi_dnc WHERE phone IN :phones;

-- name: number_listed(phone)$
SELECT EXISTS (SELECT 1 FROM dialerapi_dnc WHERE phone = :phone);

-- name: leads_by_phone_facts()
-- Unreserved leads in the claim's states, by form_type, mark and call zone (held_leads).
SELECT form_type, do_not_call, call_zone_id, COUNT(*) AS n FROM sales_master
WHERE dial_status IN ('Callback', 'Pending', 'Abandoned', 'Not Connected') AND isReserved = 0
GROUP BY form_type, do_not_call, call_zone_id;

-- name: call_zones()
SELECT id, zones FROM dialerapi_call_zones ORDER BY id;

-- name: call_zones_by_key(zones_keys)
SELECT id, zones_key FROM dialerapi_call_zones WHERE zones_key IN :zones_keys;

-- name: insert_call_zone(zones_key, zones)!
INSERT IGNORE INTO dialerapi_call_zones (zones_key, zones) VALUES (:zones_key, :zones);

-- name: call_zone_id(zones_key)$
SELECT id FROM dialerapi_call_zones WHERE zones_key = :zones_key;

-- name: set_phone_facts(id, phone_e164, do_not_call, call_zone_id)!
-- What a claim worked out from a lead's phone_number when the stored columns disagreed (a row
-- pushed by the previous release, or written by an engine's own SQL).
UPDATE sales_master SET phone_e164 = :phone_e164, do_not_call = :do_not_call, call_zone_id = :call_zone_id
WHERE id = :id;

-- name: leads_not_worked_out(max_rows)
-- Leads whose phone facts no push worked out (call_zone_id 0: written before migration 0012, or
-- by an engine's own SQL), except live ones, in id order through ix_sales_master_phone_e164.
-- Locked as read, skipping rows another transaction holds: two backfills at once (the job and
-- `dialerapi dnc backfill`) take different leads instead of queueing on the same 500, and a lead a
-- push holds is left to that push, which works its facts out itself. Queued on the same rows, eight
-- backfills and eight pushes waited past the 50 s lock wait timeout under make test-clock.
SELECT id, phone_number, form_type, region, postal_code, consent_type FROM sales_master
WHERE phone_e164 IS NULL AND call_zone_id = 0 AND NOT (dial_status = 'Calling' AND isReserved = 1)
ORDER BY id
LIMIT :max_rows
FOR UPDATE SKIP LOCKED;

-- name: set_worked_out_facts*!
-- phone_e164, do_not_call, call_zone_id of a lead, unless a push changed its phone or worked it
-- out since it was read, or it went live.
UPDATE sales_master SET phone_e164 = %s, do_not_call = %s, call_zone_id = %s
WHERE id = %s AND phone_number = %s AND call_zone_id = 0 AND NOT (dial_status = 'Calling' AND isReserved = 1);

-- name: held_counts()
-- The leads each rule held per form_type at the last count (compliance.count_held).
SELECT form_type, reason, leads FROM dialerapi_held_counts ORDER BY form_type, reason;

-- name: held_counted_at()$
-- When they were counted: epoch seconds UTC, NULL before the first count.
SELECT (SELECT value FROM dialerapi_counters WHERE name = 'held_counted_at');

-- name: clear_held_counts()!
DELETE FROM dialerapi_held_counts;

-- name: add_held_counts*!
INSERT INTO dialerapi_held_counts (form_type, reason, leads, counted_at_utc) VALUES (%s, %s, %s, %s);

-- name: set_held_counted_at(epoch)!
INSERT INTO dialerapi_counters (name, value) VALUES ('held_counted_at', :epoch) ON DUPLICATE KEY UPDATE value = :epoch;
