-- Results back to the CRM (issue #48, rules.lead_events): the lead read, the events feed and its
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

-- name: read_lead(oli_id)^
-- The lead read (GET /api/leads/{oli_id}), with the invisible columns and its calling zones.
SELECT m.*, m.callback_agent_id, z.zones AS call_zones
FROM sales_master AS m LEFT JOIN dialerapi_call_zones AS z ON z.id = m.call_zone_id
WHERE m.oli_id = :oli_id;

-- name: lead_calls(lead_id, before, max_rows)
-- A lead's call attempts newest first, below the cursor (an attempt id); ix_sales_call_attempts_lead
-- holds (lead_id, id).
SELECT id, agent_id, call_type, started_at, ended_at, result, hangup_by, hangup_cause, form_type,
       answered_at, agent_connected_at, connect_seconds, late_connect
FROM sales_call_attempts WHERE lead_id = :lead_id AND id < :before ORDER BY id DESC LIMIT :max_rows;

-- name: leads_listed_by_phones(phones)
-- The leads a do-not-call listing is about to mark (dnc.mark_leads' own condition), for their events.
SELECT id, oli_id, data_id, phone_e164 FROM sales_master
WHERE phone_e164 IN :phones AND do_not_call = 0 AND NOT (dial_status = 'Calling' AND isReserved = 1);

-- name: leads_listed_by_staging()
SELECT m.id, m.oli_id, m.data_id, m.phone_e164 FROM sales_master AS m
JOIN dialerapi_dnc_staging AS s ON m.phone_e164 = s.phone
WHERE m.do_not_call = 0 AND NOT (m.dial_status = 'Calling' AND m.isReserved = 1);

-- name: leads_by_oli_ids(oli_ids)
SELECT id, oli_id, data_id FROM sales_master WHERE oli_id IN :oli_ids;

-- name: fallen_back_callbacks(edge, max_rows)
-- Personal callbacks due at or before the fallback edge that no event has told of yet.
SELECT m.id, m.oli_id, m.data_id, m.callback_agent_id, m.callback_scheduled_at
FROM sales_master AS m
WHERE m.callback_agent_id IS NOT NULL AND m.dial_status = 'Callback' AND m.callback_scheduled_at <= :edge
  AND NOT EXISTS (SELECT 1 FROM dialerapi_lead_events AS e
                  WHERE e.dedupe_key = CONCAT('fell_back:', m.id, ':', CAST(m.callback_scheduled_at AS CHAR)))
ORDER BY m.callback_scheduled_at LIMIT :max_rows;

-- name: owned_callbacks(agent_id)
SELECT id, oli_id, data_id, callback_agent_id, callback_scheduled_at FROM sales_master
WHERE callback_agent_id = :agent_id AND dial_status = 'Callback';
