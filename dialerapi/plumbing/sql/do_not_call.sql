-- The do-not-call list (rules.compliance.do_not_call): numbers as E.164 digits
-- (rules.compliance.phones) in BIGINT UNSIGNED, imports staged, and the leads they mark.

-- name: insert_numbers*!
-- Multi-row; a number already listed keeps its first source.
INSERT IGNORE INTO dialerapi_dnc (phone, source, oli_id, added_at) VALUES (%s, %s, %s, %s);

-- name: delete_numbers(phones)!
DELETE FROM dialerapi_dnc WHERE phone IN :phones;

-- name: mark_leads(phones, listed)!
-- Every lead of these numbers, whatever its oli_id or state, except a live one (the API never
-- modifies a live row): the claim's filter follows the list. A live lead keeps its mark until a
-- claim after its settle reads the list for it (compliance.refusal) and corrects it.
UPDATE sales_master SET do_not_call = :listed
WHERE phone_e164 IN :phones AND do_not_call <> :listed AND NOT (dial_status = 'Calling' AND isReserved = 1);

-- name: numbers_after(after, max_rows)
-- One page of the list in number order (export without holding it all).
SELECT phone, source, oli_id, added_at FROM dialerapi_dnc WHERE phone > :after ORDER BY phone LIMIT :max_rows;

-- name: create_staging#
-- An import's numbers, private to its connection until merged in one transaction.
CREATE TEMPORARY TABLE IF NOT EXISTS dialerapi_dnc_staging (phone BIGINT UNSIGNED NOT NULL PRIMARY KEY) ENGINE=InnoDB;

-- name: stage_numbers*!
INSERT IGNORE INTO dialerapi_dnc_staging (phone) VALUES (%s);

-- name: merge_staging(source, added_at)!
INSERT IGNORE INTO dialerapi_dnc (phone, source, oli_id, added_at)
SELECT phone, :source, NULL, :added_at FROM dialerapi_dnc_staging;

-- name: mark_staged_leads()!
UPDATE sales_master AS m JOIN dialerapi_dnc_staging AS s ON m.phone_e164 = s.phone
SET m.do_not_call = 1
WHERE m.do_not_call = 0 AND NOT (m.dial_status = 'Calling' AND m.isReserved = 1);

-- name: drop_staging#
DROP TEMPORARY TABLE IF EXISTS dialerapi_dnc_staging;

-- name: change_counter(name, delta)!
INSERT INTO dialerapi_counters (name, value) VALUES (:name, :delta) ON DUPLICATE KEY UPDATE value = value + :delta;

-- name: counter(name)$
SELECT COALESCE((SELECT value FROM dialerapi_counters WHERE name = :name), 0);

-- name: set_lead_mark(id, listed)!
-- One lead's mark, set from the list at its call's end (dialstate.end_call).
UPDATE sales_master SET do_not_call = :listed WHERE id = :id;
