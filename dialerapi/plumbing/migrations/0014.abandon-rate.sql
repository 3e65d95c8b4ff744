-- The abandon rate the law counts, per campaign.
--
-- sales_call_attempts: every settled call attempt becomes enough to prove compliance on its own.
--   form_type: the lead's campaign when it was dialed. A push never touches a live lead, so the
--     lead's form_type at settle is the one it was claimed with; a later push may change the
--     lead's, never the attempt's.
--   reservation_id: the claim the attempt ends.
--   answered_at: the first POST /engine/bridge of that reservation (the customer answered).
--   agent_connected_at: the first POST /engine/call-connected of that reservation.
--   Both wall-clock DB_TIMEZONE, whole seconds (decisions.md D2); NULL when the engine never said.
--   connect_seconds: elapsed seconds from answered_at to agent_connected_at (daylight saving
--     counted), and late_connect: 1 when that was more than abandon_connect_seconds as set at the
--     settle (a compliance abandon), so a record keeps the rule it was judged by.
-- sales_master gains the two moments of the call in progress and whether a predictive claim
--   dialed it (predictive_call: until an agent takes it, the abandon limit counts it as a possible
--   abandon), INVISIBLE (the engine's SELECT * and column-less INSERT see the table as before),
--   added in place (no rebuild). Rows written by the previous release leave them unset: its
--   settles are counted by outcome alone.
-- dialerapi_abandon_counts: settles counted as they commit, per form_type and period (grain m: a
--   minute, h: an hour, d: a floor day, starts_at its first moment, wall-clock DB_TIMEZONE) and per
--   database node (`node`: @@hostname:@@port of the node that ran the settle), so settles on two
--   Galera nodes never write the same row (no certification conflict on a hot counter row). A
--   window's figures are the sum over nodes of a bounded number of rows: the key leads with grain
--   and starts_at, so a window is one range of the key however long the history (a key led by
--   form_type made a correlated read scan every row of its form_type and grain).
-- sales_dialer_config gains the abandon settings beside the calling window.
-- depends: 0013.claim-by-zone

ALTER TABLE sales_call_attempts
  ADD COLUMN form_type VARCHAR(64) NULL,
  ADD COLUMN reservation_id CHAR(36) NULL,
  ADD COLUMN answered_at DATETIME NULL,
  ADD COLUMN agent_connected_at DATETIME NULL,
  ADD COLUMN connect_seconds INT NULL,
  ADD COLUMN late_connect TINYINT(1) NULL,
  ADD KEY ix_sales_call_attempts_ended (ended_at, form_type);

ALTER TABLE sales_master
  ADD COLUMN call_answered_at DATETIME NULL INVISIBLE,
  ADD COLUMN agent_connected_at DATETIME NULL INVISIBLE,
  ADD COLUMN predictive_call TINYINT(1) NOT NULL DEFAULT 0 INVISIBLE,
  ALGORITHM=INSTANT;

CREATE TABLE dialerapi_abandon_counts (
  grain CHAR(1) CHARACTER SET ascii NOT NULL,
  form_type VARCHAR(64) NOT NULL,
  starts_at DATETIME NOT NULL,
  node VARCHAR(160) NOT NULL,
  calls INT NOT NULL DEFAULT 0,
  answered INT NOT NULL DEFAULT 0,
  abandoned INT NOT NULL DEFAULT 0,
  late_connects INT NOT NULL DEFAULT 0,
  PRIMARY KEY (grain, starts_at, form_type, node)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

ALTER TABLE sales_dialer_config
  ADD COLUMN enforce_abandon_limit TINYINT(1) NOT NULL DEFAULT 1,
  ADD COLUMN abandon_limit DECIMAL(5, 4) NOT NULL DEFAULT 0.0300,
  ADD COLUMN abandon_period VARCHAR(8) NOT NULL DEFAULT '30d',
  ADD COLUMN abandon_min_answered INT NOT NULL DEFAULT 50,
  ADD COLUMN abandon_connect_seconds INT NOT NULL DEFAULT 2;
