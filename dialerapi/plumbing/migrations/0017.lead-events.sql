-- Results back to the CRM: what happened to leads, as an ordered feed and as webhooks.
--
-- dialerapi_lead_events: one row per change of a lead the CRM hears of, inserted in the transaction
--   of the change (rules.events.lead_events.record), so an event exists exactly when its change committed.
--   `seq` is the feed's order, given to committed rows by one sequencer at a time
--   (rules.events.lead_events.sequence): ids are taken at INSERT and rows commit out of id order (and each
--   Galera node takes ids from its own series), so a cursor over ids could pass a row that commits
--   later; a cursor over seq cannot. NULL until sequenced. `dedupe_key` makes an event written by
--   a job that may run twice (a personal callback's fallback) one row. Times: `occurred_at`
--   wall-clock DB_TIMEZONE, `occurred_at_utc` the same instant in UTC (decisions.md D2).
-- dialerapi_webhook_endpoints: the operator's receivers, each with its own secret (whsec_...),
--   the event types it takes and `fanned_seq`, the feed position up to which its deliveries exist.
-- dialerapi_webhook_deliveries: one event for one endpoint. `state`: queued (an earlier event of
--   the lead is not delivered yet), ready (due at next_attempt_at), delivered, failed (retried for
--   WEBHOOK_RETRY_HOURS in vain). Times UTC.
-- dialerapi_webhook_attempts: every HTTP attempt, for `dialerapi webhooks log`. Times UTC.
-- New tables only: the previous release never reads them and serves on this schema.
-- depends: 0016.draining-hosts

CREATE TABLE dialerapi_lead_events (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  seq BIGINT NULL,
  type VARCHAR(40) NOT NULL,
  lead_id BIGINT NOT NULL,
  oli_id VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  data_id CHAR(36) CHARACTER SET ascii NOT NULL,
  occurred_at DATETIME NOT NULL,
  occurred_at_utc DATETIME NOT NULL,
  body TEXT NOT NULL,
  dedupe_key VARCHAR(120) CHARACTER SET ascii NULL,
  UNIQUE KEY uq_lead_events_seq (seq),
  UNIQUE KEY uq_lead_events_dedupe (dedupe_key),
  KEY ix_lead_events_occurred (occurred_at_utc)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE dialerapi_webhook_endpoints (
  id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  url VARCHAR(2000) NOT NULL,
  secret VARCHAR(100) CHARACTER SET ascii NOT NULL,
  previous_secret VARCHAR(100) CHARACTER SET ascii NULL,
  previous_secret_until DATETIME NULL,
  event_types VARCHAR(500) CHARACTER SET ascii NOT NULL,
  enabled TINYINT(1) NOT NULL DEFAULT 1,
  disabled_reason VARCHAR(100) NULL,
  failing_since DATETIME NULL,
  fanned_seq BIGINT NOT NULL DEFAULT 0,
  created_at DATETIME NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE dialerapi_webhook_deliveries (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  endpoint_id INT NOT NULL,
  event_id BIGINT NOT NULL,
  lead_id BIGINT NOT NULL,
  state VARCHAR(10) CHARACTER SET ascii NOT NULL,
  attempts INT NOT NULL DEFAULT 0,
  next_attempt_at DATETIME(3) NOT NULL,
  created_at DATETIME(3) NOT NULL,
  delivered_at DATETIME(3) NULL,
  KEY ix_webhook_deliveries_due (endpoint_id, state, next_attempt_at),
  KEY ix_webhook_deliveries_lead (endpoint_id, lead_id, state),
  KEY ix_webhook_deliveries_event (event_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE dialerapi_webhook_attempts (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  delivery_id BIGINT NOT NULL,
  endpoint_id INT NOT NULL,
  event_id BIGINT NOT NULL,
  attempted_at DATETIME(3) NOT NULL,
  status INT NULL,
  latency_ms INT NOT NULL,
  error VARCHAR(200) NULL,
  response_head VARCHAR(200) NULL,
  KEY ix_webhook_attempts_endpoint (endpoint_id, id),
  KEY ix_webhook_attempts_at (attempted_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
