-- The floor's caller IDs: the numbers the engine presents to the customer, chosen at each outbound
-- claim by the campaign's rule (rules.caller_ids; docs/operations/caller-ids.md).
--
-- dialerapi_caller_ids: one row per number the floor owns. `number` is its E.164 digits (as
--   sales_master.phone_e164); `country` (ISO 3166 alpha-2), `area_prefix` (the E.164 digits through
--   its area code, `1919` for +1 919 ...; NULL for a number without one) and `regions` (its places as
--   a lead's are worked out, `US,US-NC`) are worked out once when it is added. `state` is active,
--   flagged (not presented until set active again) or retired (never presented again; kept for
--   30 days after its last use before the number may be released). `daily_cap` NULL: the floor's
--   caller_id_daily_cap. `presented_today` counts the calls presented on `presented_day` (a
--   calendar day), so a new day starts at 0 without a job. Moments are naive UTC (decisions.md D2).
-- dialerapi_caller_id_pools: the pools each number is in (one or more), each row with what a claim
--   reads to choose among the pool's numbers by one index instead of reading them all: the
--   number itself, its area_prefix, `region` (its state, else its country: the last of its regions),
--   state, daily_cap and `presented_rank`, its day and that day's count
--   (rules.caller_ids.numbers.rank; a day's ranks are at least its day_key), kept by the
--   statements that change the number.
-- dialerapi_caller_id_changes: every change of a number (added, updated, flagged, retired, ...: when,
--   by which credential, old and new).
-- sales_dialer_config.caller_id_daily_cap (75), caller_id_default_pool ('default'),
--   caller_id_headroom_share (0.1: /health names a pool with less of today's headroom left).
-- sales_master.caller_id, sales_call_attempts.caller_id: the number last presented to the lead (a
--   sticky rule presents it again) and the number each call presented. INVISIBLE, added in place:
--   the CRM's and the engine's SELECT * and column-less INSERT see the table as before.
-- Expand only: the previous release names none of them.
-- depends: 0026.consent-counts

CREATE TABLE dialerapi_caller_ids (
  id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  number BIGINT UNSIGNED NOT NULL,
  country CHAR(2) CHARACTER SET ascii NULL,
  area_prefix VARCHAR(8) CHARACTER SET ascii NULL,
  regions VARCHAR(64) CHARACTER SET ascii NOT NULL DEFAULT '',
  state VARCHAR(8) CHARACTER SET ascii NOT NULL DEFAULT 'active',
  daily_cap INT NULL,
  presented_day DATE NULL,
  presented_today INT NOT NULL DEFAULT 0,
  last_used_at_utc DATETIME NULL,
  retired_at_utc DATETIME NULL,
  note VARCHAR(200) NOT NULL DEFAULT '',
  created_at_utc DATETIME NOT NULL,
  updated_at_utc DATETIME NOT NULL,
  updated_by VARCHAR(32) NOT NULL,
  UNIQUE KEY uq_dialerapi_caller_ids_number (number)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE dialerapi_caller_id_pools (
  pool VARCHAR(64) CHARACTER SET ascii NOT NULL,
  caller_id INT NOT NULL,
  number BIGINT UNSIGNED NOT NULL,
  area_prefix VARCHAR(8) CHARACTER SET ascii NULL,
  region VARCHAR(16) CHARACTER SET ascii NOT NULL DEFAULT '',
  state VARCHAR(8) CHARACTER SET ascii NOT NULL DEFAULT 'active',
  daily_cap INT NULL,
  presented_rank BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (pool, caller_id),
  KEY ix_dialerapi_caller_id_pools_caller_id (caller_id),
  KEY ix_dialerapi_caller_id_pools_rank (pool, state, presented_rank, caller_id, daily_cap, number),
  KEY ix_dialerapi_caller_id_pools_area (pool, area_prefix, state, presented_rank, caller_id, daily_cap, number),
  KEY ix_dialerapi_caller_id_pools_region (pool, region, state, presented_rank, caller_id, daily_cap, number)
) ENGINE=InnoDB;

CREATE TABLE dialerapi_caller_id_changes (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  caller_id INT NOT NULL,
  action VARCHAR(16) CHARACTER SET ascii NOT NULL,
  changed_at_utc DATETIME NOT NULL,
  changed_by VARCHAR(32) NOT NULL,
  old MEDIUMTEXT NULL,
  new MEDIUMTEXT NOT NULL,
  KEY ix_dialerapi_caller_id_changes_caller_id (caller_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

ALTER TABLE sales_dialer_config
  ADD COLUMN caller_id_daily_cap INT NOT NULL DEFAULT 75,
  ADD COLUMN caller_id_default_pool VARCHAR(64) CHARACTER SET ascii NOT NULL DEFAULT 'default',
  ADD COLUMN caller_id_headroom_share DOUBLE NOT NULL DEFAULT 0.1;

ALTER TABLE sales_master
  ADD COLUMN caller_id BIGINT UNSIGNED NULL INVISIBLE,
  ALGORITHM=INSTANT;

ALTER TABLE sales_call_attempts
  ADD COLUMN caller_id BIGINT UNSIGNED NULL,
  ALGORITHM=INSTANT;
