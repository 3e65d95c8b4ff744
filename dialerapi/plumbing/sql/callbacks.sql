-- Personal callbacks (rules.leads.callbacks): a Callback lead with callback_agent_id set waits
-- for that agent until its fallback. Every read here starts from ix_callback_agent (migration
-- 0015): none of them reads a lead without an owner. The floor counts read every due personal
-- callback of the floor (a few per agent on a live floor).

-- name: personal_due(part, agent_id, skills, now, callbacks_open, any_zone, zone_ids, max_rows)
-- The owner's due personal callbacks of the skills given, oldest due first, each with `lawful`
-- (any_zone, or its call zone is open now), in claims.sql due_candidates' shape with bucket 0:
-- ahead of all other work. A range of ix_callback_agent in due order, read until max_rows
-- claimable ones are found; a progressive claim sends it in its first candidate statement.
SELECT :part AS part, 0 AS bucket, id, claim_due AS due, :any_zone OR call_zone_id IN :zone_ids AS lawful
FROM sales_master FORCE INDEX (ix_callback_agent)
WHERE callback_agent_id = :agent_id AND callback_scheduled_at <= :now AND :callbacks_open
  AND claim_bucket = 1 AND form_type IN :skills
ORDER BY callback_scheduled_at, id
LIMIT :max_rows;

-- name: agent_callbacks(agent_id, until, max_items)
-- An agent's personal callbacks that a claim may take, due at or before :until, oldest first.
SELECT oli_id, data_id, client_name, form_type, callback_scheduled_at
FROM sales_master FORCE INDEX (ix_callback_agent)
WHERE callback_agent_id = :agent_id AND callback_scheduled_at <= :until AND claim_bucket = 1
ORDER BY callback_scheduled_at, id
LIMIT :max_items;

-- name: personal_callbacks_due(now, fallback_never, fallback_edge)
-- Per form_type, the due personal callbacks whose owner is free to take one now (free as
-- claims.sql free_skills says, without dialing ahead), whose owner is not, and those past their
-- fallback (anyone with the skill may take them). `dialerapi agents remove` hands an owner's
-- callbacks to anyone at once; an owner deleted otherwise counts as busy, as the claims see it.
SELECT form_type, SUM(NOT fallen AND owner_free) AS owner_free, SUM(NOT fallen AND NOT owner_free) AS owner_busy,
       SUM(fallen) AS past_fallback
FROM (SELECT m.form_type,
             NOT :fallback_never AND m.claim_due <= :fallback_edge AS fallen,
             COALESCE(a.panel_active = 1 AND (a.pause_code IS NULL OR a.pause_code = '') AND a.outbound_blocked = 0
                      AND a.ami_idle = 1 AND (a.wrapup_until IS NULL OR a.wrapup_until <= :now), 0) AS owner_free
      FROM sales_master AS m FORCE INDEX (ix_callback_agent)
      LEFT JOIN sales_agents AS a ON a.id = m.callback_agent_id
      WHERE m.callback_agent_id IS NOT NULL AND m.callback_scheduled_at <= :now AND m.claim_bucket = 1) AS due
GROUP BY form_type;

-- name: clear_owner_of_leads(agent_id)!
-- An agent leaves the roster: their personal callbacks become anyone's at once.
UPDATE sales_master SET callback_agent_id = NULL WHERE callback_agent_id = :agent_id;

-- name: clear_owner_of_held(agent_id)!
UPDATE sales_pending_actions SET callbackAgentId = NULL WHERE callbackAgentId = :agent_id AND status = 'pending';

-- name: lock_agent_shared(agent_id)$
-- The agent's row in share mode: a roster removal waits until this transaction has stored its
-- owner, and then clears it (agents.remove_agent), so no callback is left owned by nobody.
SELECT id FROM sales_agents WHERE id = :agent_id LOCK IN SHARE MODE;

-- name: owned_callbacks(agent_id)
SELECT id, oli_id, data_id, callback_agent_id, callback_scheduled_at FROM sales_master
WHERE callback_agent_id = :agent_id AND dial_status = 'Callback';
