-- Campaigns (migration 0023; rules.campaigns.operations).

-- name: campaigns_generation()$
-- The campaigns' generation: the highest change id (0 when none). Read with the dialer config; a
-- host reloads the campaigns when it moved.
SELECT COALESCE(MAX(id), 0) FROM dialerapi_campaign_changes;

-- name: all_campaigns()
SELECT form_type, state, settings, updated_at, updated_by FROM dialerapi_campaigns ORDER BY form_type;

-- name: lock_campaign(form_type)^
-- The campaign's row for a change (none: its first change inserts it).
SELECT form_type, state, settings, updated_at, updated_by FROM dialerapi_campaigns
WHERE form_type = :form_type FOR UPDATE;

-- name: lock_floor_for_campaign_change()!
-- A campaign's change first locks the floor's config row: it waits for the claims in flight,
-- which hold it shared (claim_gate), and the claims after it wait for it to commit. The row
-- always exists, where a campaign's may not yet: READ COMMITTED takes no gap locks.
SELECT id FROM sales_dialer_config WHERE id = 1 FOR UPDATE;

-- name: remove_claim_gate()!
-- Every campaign change deletes the claim gate and inserts it again (migration 0024): through
-- Galera, a claim on another node that read the campaign's state before this change fails
-- certification (a delete or insert conflicts with its reference; an update would not).
DELETE FROM dialerapi_claim_gates WHERE id = 1;

-- name: restore_claim_gate()!
INSERT INTO dialerapi_claim_gates (id) VALUES (1);

-- name: claim_gate()!
-- A claim's shared lock on the floor's config row, held until it commits (lock_floor_for_campaign_change).
SELECT id FROM sales_dialer_config WHERE id = 1 LOCK IN SHARE MODE;

-- name: campaign_state(form_type)$
-- The state of a claimed lead's campaign as last committed (read after claim_gate), or NULL.
SELECT state FROM dialerapi_campaigns WHERE form_type = :form_type;

-- name: upsert_campaign(form_type, state, settings, updated_at, updated_by)!
INSERT INTO dialerapi_campaigns (form_type, state, settings, updated_at, updated_by)
VALUES (:form_type, :state, :settings, :updated_at, :updated_by)
ON DUPLICATE KEY UPDATE state = VALUES(state), settings = VALUES(settings), updated_at = VALUES(updated_at),
                        updated_by = VALUES(updated_by);

-- name: insert_campaign_change(form_type, action, changed_at, changed_at_utc, changed_by, old_values, new_values)!
INSERT INTO dialerapi_campaign_changes (form_type, action, changed_at, changed_at_utc, changed_by, old_values, new_values)
VALUES (:form_type, :action, :changed_at, :changed_at_utc, :changed_by, :old_values, :new_values);

-- name: campaign_changes(form_type, max_rows)
-- The campaign's changes, newest first.
SELECT id, action, changed_at, changed_at_utc, changed_by, old_values, new_values
FROM dialerapi_campaign_changes WHERE form_type = :form_type ORDER BY id DESC LIMIT :max_rows;

-- name: known_form_types()
-- Every form_type the floor knows of: its agents' skills and its campaigns (the leads' form_types
-- are not read: a scan of the master table).
SELECT form_type FROM sales_agent_skills
UNION SELECT form_type FROM dialerapi_campaigns
ORDER BY form_type;
