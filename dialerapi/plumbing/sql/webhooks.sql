-- Webhook endpoints and deliveries (rules.events.webhooks). Times are naive UTC. Callers own the
-- transaction.

-- name: insert_endpoint(url, secret, event_types, fanned_seq, created_at)!
INSERT INTO dialerapi_webhook_endpoints (url, secret, event_types, fanned_seq, created_at)
VALUES (:url, :secret, :event_types, :fanned_seq, :created_at);

-- name: endpoints()
SELECT * FROM dialerapi_webhook_endpoints ORDER BY id;

-- name: lock_endpoint(id)^
SELECT * FROM dialerapi_webhook_endpoints WHERE id = :id FOR UPDATE;

-- name: lock_endpoints()
SELECT * FROM dialerapi_webhook_endpoints ORDER BY id FOR UPDATE;

-- name: set_endpoint_enabled(id, enabled, reason)!
UPDATE dialerapi_webhook_endpoints SET enabled = :enabled, disabled_reason = :reason WHERE id = :id;

-- name: set_endpoint_secret(id, secret, previous_secret, previous_secret_until)!
UPDATE dialerapi_webhook_endpoints
SET secret = :secret, previous_secret = :previous_secret, previous_secret_until = :previous_secret_until
WHERE id = :id;

-- name: set_fanned(id, fanned_seq)!
UPDATE dialerapi_webhook_endpoints SET fanned_seq = :fanned_seq WHERE id = :id;

-- name: set_failing(id, since)!
-- failing_since: the first give-up since the endpoint's last 2xx.
UPDATE dialerapi_webhook_endpoints SET failing_since = COALESCE(failing_since, :since) WHERE id = :id;

-- name: clear_failing(id)!
UPDATE dialerapi_webhook_endpoints SET failing_since = NULL WHERE id = :id AND failing_since IS NOT NULL;

-- name: delete_endpoint(id)!
DELETE FROM dialerapi_webhook_endpoints WHERE id = :id;

-- name: delete_endpoint_deliveries(id)!
DELETE FROM dialerapi_webhook_deliveries WHERE endpoint_id = :id;

-- name: waiting_leads(endpoint_id, lead_ids)
-- The leads that already have an undelivered event for the endpoint: a new one queues behind it.
SELECT DISTINCT lead_id FROM dialerapi_webhook_deliveries
WHERE endpoint_id = :endpoint_id AND lead_id IN :lead_ids AND state IN ('queued', 'ready');

-- name: insert_deliveries*!
INSERT INTO dialerapi_webhook_deliveries (endpoint_id, event_id, lead_id, state, next_attempt_at, created_at)
VALUES (%s, %s, %s, %s, %s, %s);

-- name: due_deliveries(endpoint_id, now, max_rows)
SELECT d.id, d.endpoint_id, d.event_id, d.lead_id, d.attempts, d.created_at
FROM dialerapi_webhook_deliveries AS d
WHERE d.endpoint_id = :endpoint_id AND d.state = 'ready' AND d.next_attempt_at <= :now
ORDER BY d.next_attempt_at, d.id LIMIT :max_rows;

-- name: hold_deliveries(ids, until)!
-- Taken for sending: no other host sends them before `until` (longer than one attempt can take).
UPDATE dialerapi_webhook_deliveries SET next_attempt_at = :until WHERE id IN :ids;

-- name: lock_deliveries(ids)
SELECT * FROM dialerapi_webhook_deliveries WHERE id IN :ids ORDER BY id FOR UPDATE;

-- name: mark_delivered(ids, at)!
UPDATE dialerapi_webhook_deliveries SET state = 'delivered', delivered_at = :at, attempts = attempts + 1
WHERE id IN :ids;

-- name: schedule_retries*!
-- Each (next_attempt_at, id).
UPDATE dialerapi_webhook_deliveries SET attempts = attempts + 1, next_attempt_at = %s WHERE id = %s;

-- name: mark_failed(ids)!
UPDATE dialerapi_webhook_deliveries SET state = 'failed', attempts = attempts + 1 WHERE id IN :ids;

-- name: queued_heads(endpoint_id, lead_ids)
-- Each lead's next event for the endpoint, now that the one before it is done (ix_webhook_deliveries_lead).
SELECT MIN(id) AS id FROM dialerapi_webhook_deliveries
WHERE endpoint_id = :endpoint_id AND lead_id IN :lead_ids AND state = 'queued' GROUP BY lead_id;

-- name: make_ready(ids, now)!
UPDATE dialerapi_webhook_deliveries SET state = 'ready', next_attempt_at = :now WHERE id IN :ids;

-- name: insert_attempts*!
INSERT INTO dialerapi_webhook_attempts
  (delivery_id, endpoint_id, event_id, attempted_at, status, latency_ms, error, response_head)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s);

-- name: attempts_log(endpoint_id, max_rows)
SELECT a.*, e.type FROM dialerapi_webhook_attempts AS a
LEFT JOIN dialerapi_lead_events AS e ON e.id = a.event_id
WHERE a.endpoint_id = :endpoint_id ORDER BY a.id DESC LIMIT :max_rows;

-- name: oldest_waiting(endpoint_id)$
-- The oldest undelivered (queued or ready) event's moment for the endpoint.
SELECT MIN(e.occurred_at_utc) FROM dialerapi_webhook_deliveries AS d
JOIN dialerapi_lead_events AS e ON e.id = d.event_id
WHERE d.endpoint_id = :endpoint_id AND d.state IN ('queued', 'ready');

-- name: first_unfanned(after)$
-- The moment of the oldest event past an endpoint's feed position `after` (not given to it yet).
SELECT occurred_at_utc FROM dialerapi_lead_events WHERE seq > :after ORDER BY seq LIMIT 1;

-- name: first_unsequenced()$
-- The moment of the oldest event with no feed place yet (no endpoint has it).
SELECT occurred_at_utc FROM dialerapi_lead_events WHERE seq IS NULL ORDER BY id LIMIT 1;

-- name: counters_like(pattern)
SELECT name, value FROM dialerapi_counters WHERE name LIKE :pattern;

-- name: prune_deliveries(before, max_rows)!
DELETE FROM dialerapi_webhook_deliveries WHERE created_at < :before LIMIT :max_rows;

-- name: prune_attempts(before, max_rows)!
DELETE FROM dialerapi_webhook_attempts WHERE attempted_at < :before LIMIT :max_rows;

-- name: lock_lease(name)^
SELECT lease_until, run_by FROM dialerapi_job_runs WHERE name = :name FOR UPDATE;

-- name: insert_lease(name, started_at, lease_until, run_by)!
INSERT INTO dialerapi_job_runs (name, last_started_at, lease_until, run_by)
VALUES (:name, :started_at, :lease_until, :run_by);

-- name: renew_lease(name, started_at, lease_until, run_by)!
-- last_started_at: when this holder took the lease (kept while it renews).
UPDATE dialerapi_job_runs
SET last_started_at = IF(run_by = :run_by, last_started_at, :started_at), lease_until = :lease_until, run_by = :run_by
WHERE name = :name;
