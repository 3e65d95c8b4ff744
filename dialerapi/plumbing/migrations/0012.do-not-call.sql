-- Do-not-call and calling hours in the customer's own time zone.
--
-- dialerapi_dnc: the do-not-call list, one row per phone number as the digits of its E.164 form
-- (+91 98765 43210 is 919876543210); `source` says who listed it (dnd: a CRM DND disposition, cli,
-- api, or an import's --source), `oli_id` the lead of a DND disposition.
-- dialerapi_call_zones: each distinct set of IANA zones a phone number can be in (phonenumbers'
-- time-zone data, ';'-separated, sorted; '' when the number has none), keyed by its SHA-1.
-- sales_master gains what a push works out from phone_number, so a claim filters without parsing:
-- phone_e164 (NULL until worked out), do_not_call (1 while the number is listed) and call_zone_id
-- (0 until worked out). The claim indexes gain the two as trailing columns, so a candidate query
-- filters on them inside the index; `id` is named before them, so the index order is still the
-- claim's (due time, id): the previous release's claim reads these indexes in that order without
-- a sort, so it serves on this schema unchanged.
-- sales_dialer_config gains the floor-wide settings beside work_start/work_end.
-- depends: 0011.socket-hosts

CREATE TABLE dialerapi_dnc (
  phone BIGINT UNSIGNED NOT NULL PRIMARY KEY,
  source VARCHAR(32) NOT NULL,
  oli_id VARCHAR(100) NULL,
  added_at DATETIME NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

-- Counts kept as their tables change; dnc_numbers is the list's size.
CREATE TABLE dialerapi_counters (
  name VARCHAR(64) NOT NULL PRIMARY KEY,
  value BIGINT NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE dialerapi_call_zones (
  id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  zones_key CHAR(40) CHARACTER SET ascii NOT NULL,
  zones TEXT CHARACTER SET ascii NOT NULL,
  UNIQUE KEY uq_dialerapi_call_zones_key (zones_key)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

ALTER TABLE sales_master
  ADD COLUMN phone_e164 BIGINT UNSIGNED NULL,
  ADD COLUMN do_not_call TINYINT(1) NOT NULL DEFAULT 0,
  ADD COLUMN call_zone_id INT NOT NULL DEFAULT 0,
  ADD KEY ix_sales_master_phone_e164 (phone_e164),
  ADD KEY ix_claim_retry_v2 (dial_status, isReserved, form_type, next_retry_at, id, do_not_call, call_zone_id),
  ADD KEY ix_claim_callback_v2 (dial_status, isReserved, form_type, callback_scheduled_at, id, do_not_call,
                                call_zone_id);

ALTER TABLE sales_master DROP KEY ix_claim_retry, DROP KEY ix_claim_callback;

ALTER TABLE sales_dialer_config
  ADD COLUMN obey_calling_window TINYINT(1) NOT NULL DEFAULT 0,
  ADD COLUMN calling_window_start TIME NOT NULL DEFAULT '09:00:00',
  ADD COLUMN calling_window_end TIME NOT NULL DEFAULT '21:00:00',
  ADD COLUMN phone_default_region CHAR(2) NOT NULL DEFAULT 'IN',
  ADD COLUMN dnd_reasons VARCHAR(255) NOT NULL DEFAULT 'DND',
  ADD COLUMN dnc_allow_inbound TINYINT(1) NOT NULL DEFAULT 0;
