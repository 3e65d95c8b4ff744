-- Contact caps per phone number and retries per outcome.
--
-- dialerapi_contact_caps: the caps, each at most `max_attempts` dial attempts to one phone number
--   (its E.164 digits, across every lead with that number) in a rolling `window_seconds`, for
--   every number or those of `region` (comma-separated: ISO 3166 countries, `GB`, or US states by
--   their area codes, `US-FL`), optionally of one form_type only. Off until an operator enables one
--   (`dialerapi caps enable NAME`); the shipped presets are rows with `preset` = 1, added by the
--   seed (seed.sql seed_contact_caps) that every `dialerapi db upgrade` runs.
-- dialerapi_contact_numbers: one row per number a claim dialed while a cap applied to it, with
--   its attempts of the last 31 days (`attempts`, JSON [[epoch seconds UTC, form_type,
--   reservation_id], ...], oldest first) and a `version` each recording claim raises: a claim reads
--   the row with the lead it locks and writes it back only if `version` is still what it read, so
--   two claims of one number are never both counted against one free place (on one node the
--   second waits for the first and finds the version moved; on two Galera nodes one fails
--   certification), and is run again. `last_at_utc`: its newest attempt, for the prune.
-- dialerapi_contact_capped: each number that reached a cap, per floor day (DB_TIMEZONE) and cap:
--   `dialerapi report caps`.
-- sales_master.contact_cap / contact_cap_until: the cap a claim found the lead's number at and
--   when it frees it (wall-clock DB_TIMEZONE, as next_retry_at, which it equals while the lead
--   waits on it). INVISIBLE, added in place; ix_contact_cap counts the leads waiting per form_type
--   (/engine/floor).
-- dialerapi_outcome_retries: per outcome (busy, no_answer, congestion, machine, abandoned) a delay
--   before the next attempt and a maximum of attempts with that outcome; no row (the default) is
--   the specification's retry rule for it.
-- sales_dialer_config.amd_false_positive_share: the share of `machine` outcomes taken to be live
--   people (Ofcom), added to the abandon rate's answered and abandoned; 0 adds none.
-- dialerapi_abandon_counts.machines: settles with outcome machine.
-- Expand only: the previous release serves on this schema (it never reads the new tables, and
-- its INSERTs name their columns).
-- depends: 0018.agent-states

CREATE TABLE dialerapi_contact_caps (
  name VARCHAR(64) NOT NULL PRIMARY KEY,
  max_attempts INT NOT NULL,
  window_seconds INT NOT NULL,
  region VARCHAR(255) NULL,
  form_type VARCHAR(64) NULL,
  enabled TINYINT(1) NOT NULL DEFAULT 0,
  preset TINYINT(1) NOT NULL DEFAULT 0,
  source VARCHAR(255) NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE dialerapi_contact_numbers (
  phone_e164 BIGINT UNSIGNED NOT NULL PRIMARY KEY,
  version BIGINT NOT NULL,
  attempts MEDIUMTEXT NOT NULL,
  last_at_utc DATETIME NOT NULL,
  KEY ix_contact_numbers_last (last_at_utc)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE dialerapi_contact_capped (
  day DATE NOT NULL,
  cap VARCHAR(64) NOT NULL,
  phone_e164 BIGINT UNSIGNED NOT NULL,
  form_type VARCHAR(64) NOT NULL,
  first_at_utc DATETIME NOT NULL,
  leads_held INT NOT NULL DEFAULT 1,
  PRIMARY KEY (day, cap, phone_e164)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE dialerapi_outcome_retries (
  outcome VARCHAR(16) NOT NULL PRIMARY KEY,
  delay_seconds INT NULL,
  max_attempts INT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

ALTER TABLE sales_master ADD COLUMN contact_cap VARCHAR(64) NULL INVISIBLE,
  ADD COLUMN contact_cap_until DATETIME NULL INVISIBLE, ALGORITHM=INSTANT;
ALTER TABLE sales_master ADD KEY ix_contact_cap (contact_cap_until, form_type), ALGORITHM=INPLACE, LOCK=NONE;
ALTER TABLE sales_dialer_config ADD COLUMN amd_false_positive_share DECIMAL(5,4) NOT NULL DEFAULT 0,
  ALGORITHM=INSTANT;
ALTER TABLE dialerapi_abandon_counts ADD COLUMN machines INT NOT NULL DEFAULT 0, ALGORITHM=INSTANT;
