-- Results back to the CRM (rules.events.lead_events): the lead read, the events feed and its
-- sequencer. Callers own the transaction.

-- name: insert_lead_event(type, lead_id, oli_id, data_id, occurred_at, occurred_at_utc, body, dedupe_key)!
INSERT INTO dialerapi_lead_events (type, lead_id, oli_id, data_id, occurred_at, occurred_at_utc, body, dedupe_key)
VALUES (:type, :lead_id, :oli_id, :data_id, :occurred_at, :occurred_at_utc, :body, :dedupe_key);

-- name: insert_lead_events*!
-- Many events at once (a do-not-call listing that marks many leads).
INSERT INTO dialerapi_lead_events (type, lead_id, oli_id, data_id, occurred_at, occurred_at_utc, body, dedupe_key)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s);

-- name: unsequenced_events(max_rows)
-- Committed rows without a place in the feed, oldest insert first (uq_lead_events_seq holds the NULLs).
SELECT id FROM dialerapi_lead_events WHERE seq IS NULL ORDER BY id LIMIT :max_rows;

-- name: lock_counter(name)^
SELECT value FROM dialerapi_counters WHERE name = :name FOR UPDATE;

-- name: insert_counter(name, value)!
INSERT INTO dialerapi_counters (name, value) VALUES (:name, :value);

-- name: set_counter(name, value)!
UPDATE dialerapi_counters SET value = :value WHERE name = :name;

-- name: start_sequence(base)!
SET @dialerapi_seq = :base;

-- name: sequence_events(ids)!
-- One statement gives the rows consecutive places in id order, from @dialerapi_seq + 1.
UPDATE dialerapi_lead_events SET seq = (@dialerapi_seq := @dialerapi_seq + 1)
WHERE id IN :ids AND seq IS NULL ORDER BY id;

-- name: events_after(after, max_rows)
SELECT id, seq, type, oli_id, data_id, occurred_at, occurred_at_utc, body
FROM dialerapi_lead_events WHERE seq > :after ORDER BY seq LIMIT :max_rows;

-- name: events_by_ids(ids)
SELECT id, seq, type, lead_id, oli_id, data_id, occurred_at, occurred_at_utc, body
FROM dialerapi_lead_events WHERE id IN :ids;

-- name: events_since(since, upto, max_rows)
-- Sequenced events at or after a moment (UTC), in feed order, for a replay.
SELECT id, seq, type, lead_id FROM dialerapi_lead_events
WHERE occurred_at_utc >= :since AND seq > :upto ORDER BY seq LIMIT :max_rows;

-- name: events_from_seq(after, max_rows)
-- The sequenced events after a feed position, for the webhooks' fan-out.
SELECT id, seq, type, lead_id FROM dialerapi_lead_events WHERE seq > :after ORDER BY seq LIMIT :max_rows;

-- name: last_seq()$
SELECT COALESCE(MAX(seq), 0) FROM dialerapi_lead_events;

-- name: prune_lead_events(before, max_rows)!
DELETE FROM dialerapi_lead_events WHERE occurred_at_utc < :before ORDER BY occurred_at_utc LIMIT :max_rows;

-- name: read_lead(oli_id, before, max_rows, page_rows)^
-- The lead read (GET /api/leads/{oli_id}) in one statement: the lead with its calling zones,
-- the owner of its callback and the cap that held it (invisible columns), and a page of its call attempts, newest first,
-- below the cursor (an attempt id), as the JSON array the answer carries (rules.views.lead.read_lead
-- documents its fields): the database writes it, so the driver parses one value instead of fifteen
-- per call. `more`: whether older calls are left; `last_id`: the page's oldest attempt, the next
-- cursor. ix_sales_call_attempts_lead holds (lead_id, id). Times 'YYYY-MM-DD HH:MM:SS' as stored
-- (DB_TIMEZONE); `outcome` is settle's name of `result` (states.OUTCOMES; tests/test_lead_results.py
-- holds the two equal).
SELECT m.id, m.oli_id, m.data_id, m.phone_number, m.client_name, m.form_type, m.priority_id, m.dial_status,
       m.disposeRemark, m.last_dial_result, m.hangup_by, m.hangup_cause, m.call_count, m.isReserved,
       m.last_attempt_at, m.first_attempt_at, m.next_retry_at, m.callback_scheduled_at, m.created_at,
       m.updated_at, m.do_not_call, m.phone_e164, m.callback_agent_id, m.contact_cap, m.contact_cap_until,
       m.region, m.postal_code, m.consent_type, m.consent_at, m.consent_source, m.claim_bucket, m.claim_due,
       z.zones AS call_zones,
       page.calls, page.more, page.last_id
FROM sales_master AS m
LEFT JOIN dialerapi_call_zones AS z ON z.id = m.call_zone_id
CROSS JOIN (
  SELECT JSON_ARRAYAGG(JSON_OBJECT(
           'id', id,
           'outcome', CASE result WHEN 'ANSWER' THEN 'answered' WHEN 'NOANSWER' THEN 'no_answer' WHEN 'BUSY' THEN 'busy'
                      WHEN 'CONGESTION' THEN 'congestion' WHEN 'REJECT' THEN 'rejected' WHEN 'CANCEL' THEN 'cancelled'
                      WHEN 'ABANDON' THEN 'abandoned' WHEN 'MACHINE' THEN 'machine'
                      WHEN 'ORIGINATE_FAILED' THEN 'originate_failed' END,
           'result', result, 'agent_id', agent_id, 'call_type', call_type, 'form_type', form_type,
           'started_at', DATE_FORMAT(started_at, '%%Y-%%m-%%d %%H:%%i:%%s'),
           'ended_at', DATE_FORMAT(ended_at, '%%Y-%%m-%%d %%H:%%i:%%s'),
           'answered_at', DATE_FORMAT(answered_at, '%%Y-%%m-%%d %%H:%%i:%%s'),
           'agent_connected_at', DATE_FORMAT(agent_connected_at, '%%Y-%%m-%%d %%H:%%i:%%s'),
           'connect_seconds', connect_seconds,
           'late_connect', CASE WHEN late_connect IS NOT NULL THEN JSON_EXTRACT(IF(late_connect, 'true', 'false'), '$') END,
           'hangup_by', hangup_by, 'hangup_cause', hangup_cause)
         ORDER BY id DESC LIMIT :max_rows) AS calls,
         COUNT(*) > :max_rows AS more,
         SUBSTRING_INDEX(GROUP_CONCAT(id ORDER BY id DESC LIMIT :max_rows), ',', -1) AS last_id
  FROM (SELECT * FROM sales_call_attempts
        WHERE lead_id = (SELECT id FROM sales_master WHERE oli_id = :oli_id) AND id < :before
        ORDER BY id DESC LIMIT :page_rows) AS recent
) AS page
WHERE m.oli_id = :oli_id;

-- name: leads_marked_by_phones(phones, listed)
-- The leads a do-not-call listing (:listed 1) or removal (0) is about to mark or unmark
-- (dnc.mark_leads' own condition), for their events.
SELECT id, oli_id, data_id, phone_e164 FROM sales_master
WHERE phone_e164 IN :phones AND do_not_call <> :listed AND NOT (dial_status = 'Calling' AND isReserved = 1);

-- name: leads_listed_by_staging()
SELECT m.id, m.oli_id, m.data_id, m.phone_e164 FROM sales_master AS m
JOIN dialerapi_dnc_staging AS s ON m.phone_e164 = s.phone
WHERE m.do_not_call = 0 AND NOT (m.dial_status = 'Calling' AND m.isReserved = 1);

-- name: leads_by_oli_ids(oli_ids)
SELECT id, oli_id, data_id FROM sales_master WHERE oli_id IN :oli_ids;

-- name: fallen_back_callbacks(edge, any_form_type, form_types, other_form_types, max_rows)
-- Personal callbacks due at or before the fallback edge that no event has told of yet, of
-- `form_types` (or of any with :any_form_type), none of `other_form_types` (campaigns with a
-- fallback of their own). Each tuple holds at least one name ('' when none is meant).
SELECT m.id, m.oli_id, m.data_id, m.callback_agent_id, m.callback_scheduled_at
FROM sales_master AS m
WHERE m.callback_agent_id IS NOT NULL AND m.dial_status = 'Callback' AND m.callback_scheduled_at <= :edge
  AND (:any_form_type OR m.form_type IN :form_types) AND m.form_type NOT IN :other_form_types
  AND NOT EXISTS (SELECT 1 FROM dialerapi_lead_events AS e
                  WHERE e.dedupe_key = CONCAT('fell_back:', m.id, ':', CAST(m.callback_scheduled_at AS CHAR)))
ORDER BY m.callback_scheduled_at LIMIT :max_rows;
