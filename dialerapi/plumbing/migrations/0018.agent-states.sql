-- The supervisor's floor: every change of an agent's state, kept
-- AGENT_STATE_RETENTION_DAYS, so the board can say how long an agent has been in a state and the
-- agent time report can add a shift up.
--
-- dialerapi_agent_states: one row per change of the five availability columns of sales_agents
--   (panel_active, pause_code, ami_idle, wrapup_until, outbound_blocked), copied from the row as
--   it stands after the change, in the transaction of the change (rules.agents.state_history.record). A
--   state lasts until the agent's next row; a wrap-up ends at its `wrapup_until` (wall-clock
--   DB_TIMEZONE, as in sales_agents) with no row of its own. `at_utc`: the moment, naive UTC to
--   the second (decisions.md D2: an exact instant, whatever a fall-back night does to wall-clock).
-- dialerapi_agent_days: the agent time report of one agent and one wall-clock day (DB_TIMEZONE),
--   rolled up from the history up to `rolled_to_utc` (naive UTC; the day's end once it is over) by
--   the job every ten minutes (jobs.roll_up_tick), so a report over a month, or the board's
--   today, reads a row per agent and day and only the history after it. Seconds.
-- New tables only: the previous release never reads them and serves on this schema.
-- depends: 0017.lead-events

CREATE TABLE dialerapi_agent_states (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  agent_id BIGINT NOT NULL,
  at_utc DATETIME NOT NULL,
  panel_active TINYINT(1) NOT NULL,
  pause_code VARCHAR(32) NULL,
  ami_idle TINYINT(1) NOT NULL,
  wrapup_until DATETIME NULL,
  outbound_blocked TINYINT(1) NOT NULL,
  KEY ix_agent_states_agent (agent_id, at_utc, id),
  KEY ix_agent_states_at (at_utc)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE dialerapi_agent_days (
  agent_id BIGINT NOT NULL,
  day DATE NOT NULL,
  report TEXT NOT NULL,
  rolled_to_utc DATETIME NOT NULL,
  PRIMARY KEY (agent_id, day),
  KEY ix_agent_days_day (day)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
