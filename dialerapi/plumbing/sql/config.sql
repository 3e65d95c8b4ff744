-- The dialer config (rules.config.dialer; decisions.md D1), read by every claim and push with
-- what it carries: the caps, the restrictions, the outcome retries and the campaigns' generation.

-- name: get_dialer_config()^
SELECT isMaintainance, outbound_obey_work_hours, retry_pattern, retry_seconds, max_tries,
       work_start, work_end, disposed_priority_id, obey_calling_window, calling_window_start,
       calling_window_end, phone_default_region, dnd_reasons, dnc_allow_inbound, enforce_abandon_limit,
       abandon_limit, abandon_period, abandon_min_answered, abandon_connect_seconds,
       personal_callback_fallback_minutes, amd_false_positive_share, caller_id_daily_cap, caller_id_default_pool,
       caller_id_headroom_share, EXISTS (SELECT 1 FROM dialerapi_caller_ids) AS caller_ids_on,
       (SELECT COALESCE(MAX(h.id), 0) FROM dialerapi_caller_id_changes AS h) AS caller_ids_generation,
       (SELECT GROUP_CONCAT(CONCAT(r.outcome, ':', COALESCE(r.delay_seconds, ''), ':', COALESCE(r.max_attempts, ''))
                            ORDER BY r.outcome SEPARATOR ';')
          FROM dialerapi_outcome_retries AS r) AS outcome_retries,
       (SELECT JSON_ARRAYAGG(JSON_OBJECT('name', k.name, 'max_attempts', k.max_attempts,
                                         'window_seconds', k.window_seconds, 'region', k.region,
                                         'form_type', k.form_type, 'consent_days', k.consent_days))
          FROM dialerapi_contact_caps AS k WHERE k.enabled = 1) AS contact_caps,
       (SELECT GROUP_CONCAT(l.name ORDER BY l.name SEPARATOR ';') FROM dialerapi_calling_rules AS l) AS calling_rules,
       (SELECT JSON_ARRAYAGG(JSON_OBJECT('id', t.id, 'region', t.region, 'starts_at', t.starts_at,
                                         'ends_at', t.ends_at, 'note', t.note))
          FROM dialerapi_restrictions AS t) AS restrictions,
       (SELECT COALESCE(MAX(g.id), 0) FROM dialerapi_campaign_changes AS g) AS campaigns_generation
FROM sales_dialer_config
WHERE id = 1;

-- name: get_push_context()
-- What a push reads, in one round trip: every priority with what a push needs to know of it (may a
-- CRM use it, does it take a callback time), each row carrying the dialer config (row 1). No rows
-- means the config row is missing; a NULL id means there are no priorities.
SELECT p.id, p.is_callback, p.is_active, (p.id = c.disposed_priority_id) AS is_disposed,
       c.isMaintainance, c.outbound_obey_work_hours, c.retry_pattern, c.retry_seconds, c.max_tries,
       c.work_start, c.work_end, c.disposed_priority_id, c.obey_calling_window, c.calling_window_start,
       c.calling_window_end, c.phone_default_region, c.dnd_reasons, c.dnc_allow_inbound,
       (SELECT COALESCE(MAX(g.id), 0) FROM dialerapi_campaign_changes AS g) AS campaigns_generation
FROM sales_dialer_config AS c
LEFT JOIN sales_priorities AS p ON TRUE
WHERE c.id = 1;

-- name: set_floor_settings(enforce_abandon_limit, abandon_limit, abandon_period, abandon_min_answered, abandon_connect_seconds, personal_callback_fallback_minutes, work_start, work_end, amd_false_positive_share, caller_id_daily_cap, caller_id_default_pool, caller_id_headroom_share)!
-- What `dialerapi config set` stores, every value checked first (cli.config).
UPDATE sales_dialer_config
SET enforce_abandon_limit = :enforce_abandon_limit, abandon_limit = :abandon_limit,
    abandon_period = :abandon_period, abandon_min_answered = :abandon_min_answered,
    abandon_connect_seconds = :abandon_connect_seconds, amd_false_positive_share = :amd_false_positive_share,
    personal_callback_fallback_minutes = :personal_callback_fallback_minutes,
    work_start = :work_start, work_end = :work_end, caller_id_daily_cap = :caller_id_daily_cap,
    caller_id_default_pool = :caller_id_default_pool, caller_id_headroom_share = :caller_id_headroom_share
WHERE id = 1;

-- name: last_insert_id()$
SELECT LAST_INSERT_ID();
