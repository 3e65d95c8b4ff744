-- Campaigns: each form_type may have its own calendar, rulebook and switch.
--
-- dialerapi_campaigns: one row per form_type an operator or the CRM has set, paused or resumed.
--   `settings` is a JSON object of the settings that override sales_dialer_config's (rules.campaigns.operations
--   checks it: a campaign with `{}` behaves exactly as the floor). `state` active, paused (no new
--   claim of its leads) or ended. A claim reads its lead's campaign state after a shared lock on
--   sales_dialer_config row 1, which every change locks first (rules.campaigns.operations.check_locked): a
--   pause waits for the claims in flight, and every later claim sees it.
-- dialerapi_campaign_changes: every change kept, never updated: when (wall-clock DB_TIMEZONE and
--   UTC), by which credential, the action and the old and new values (JSON). Its highest id is the
--   campaigns' generation: every host reads it with the dialer config and reloads the campaigns
--   when it moved, so a change holds at the next claim on every host.
-- New tables only: the previous release never reads them and serves on this schema.
-- depends: 0022.capped-by-form-type

CREATE TABLE dialerapi_campaigns (
  form_type VARCHAR(64) NOT NULL PRIMARY KEY,
  state ENUM('active', 'paused', 'ended') NOT NULL DEFAULT 'active',
  settings TEXT NOT NULL,
  updated_at DATETIME NOT NULL,
  updated_by VARCHAR(100) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;

CREATE TABLE dialerapi_campaign_changes (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  form_type VARCHAR(64) NOT NULL,
  action ENUM('updated', 'paused', 'resumed') NOT NULL,
  changed_at DATETIME NOT NULL,
  changed_at_utc DATETIME NOT NULL,
  changed_by VARCHAR(100) NOT NULL,
  old_values TEXT NOT NULL,
  new_values TEXT NOT NULL,
  KEY ix_campaign_changes_form_type (form_type, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
