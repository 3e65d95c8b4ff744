-- The claim (lead-intake-api.md "Claim and retry rules"). Candidates are read without locks, in
-- claim order, from the claim indexes of migration 0013; the chosen row is then locked with SKIP
-- LOCKED, so two engines never get the same lead.

-- name: lock_agent(agent_id)^
-- The agent, locked, with their skills and allowed priorities (';'-separated). The subqueries
-- read without locks: a locking read does not lock the rows of its subqueries.
SELECT a.*,
       (SELECT GROUP_CONCAT(s.form_type ORDER BY s.form_type SEPARATOR ';')
          FROM sales_agent_skills AS s WHERE s.agent_id = a.id) AS skills,
       (SELECT GROUP_CONCAT(p.priority_id ORDER BY p.priority_id SEPARATOR ';')
          FROM sales_agent_priorities AS p WHERE p.agent_id = a.id) AS priorities
FROM sales_agents AS a
WHERE a.id = :agent_id
FOR UPDATE;

-- name: due_candidates(part, form_type, now, callbacks_open, all_priorities, priorities, any_zone, zone_ids, max_rows, fallback_never, fallback_edge)
-- The first max_rows leads of one form_type that a claim may take now, in claim order (claim_bucket
-- 1 due Callback, only while callbacks_open; 2 Pending; 3 Abandoned, a NULL next_retry_at due; 4
-- Not Connected, next_retry_at due; then claim_due, NULL first, and id), each with `part` (the
-- caller's number for this read in a UNION ALL) and `lawful` (any_zone, or its call zone is one of
-- zone_ids: open now). One range read of ix_claim_due (migration 0013; it holds no listed lead),
-- max_rows index entries at most, however few of them are lawful. A personal callback
-- is left out until its fallback: due at or before :fallback_edge, never with :fallback_never
-- (rules.leads.callbacks); its owner's claim reads it from ix_callback_agent (callbacks.sql personal_due).
-- The owner is not in the index: each due callback read costs a primary-key lookup.
SELECT :part AS part, claim_bucket AS bucket, id, claim_due AS due, :any_zone OR call_zone_id IN :zone_ids AS lawful
FROM sales_master FORCE INDEX (ix_claim_due)
WHERE form_type = :form_type
  AND ((claim_bucket = 1 AND :callbacks_open AND (claim_due IS NULL OR claim_due <= :now))
       OR (claim_bucket IN (2, 3) AND (claim_due IS NULL OR claim_due <= :now))
       OR (claim_bucket = 4 AND claim_due <= :now))
  AND (:all_priorities OR priority_id IN :priorities)
  AND (claim_bucket <> 1 OR callback_agent_id IS NULL OR (NOT :fallback_never AND claim_due <= :fallback_edge))
ORDER BY claim_bucket, claim_due, id
LIMIT :max_rows;

-- name: due_candidates_in_zone(part, form_type, zone_id, now, callbacks_open, all_priorities, priorities, max_rows, fallback_never, fallback_edge)
-- due_candidates of one call zone whose window is open, from ix_claim_zone: a zone whose window
-- is closed costs nothing, however many of its leads are due.
SELECT :part AS part, claim_bucket AS bucket, id, claim_due AS due, 1 AS lawful
FROM sales_master FORCE INDEX (ix_claim_zone)
WHERE form_type = :form_type AND call_zone_id = :zone_id
  AND ((claim_bucket = 1 AND :callbacks_open AND (claim_due IS NULL OR claim_due <= :now))
       OR (claim_bucket IN (2, 3) AND (claim_due IS NULL OR claim_due <= :now))
       OR (claim_bucket = 4 AND claim_due <= :now))
  AND (:all_priorities OR priority_id IN :priorities)
  AND (claim_bucket <> 1 OR callback_agent_id IS NULL OR (NOT :fallback_never AND claim_due <= :fallback_edge))
ORDER BY claim_bucket, claim_due, id
LIMIT :max_rows;

-- name: lock_unreserved(id)^
-- With `listed`: whether its stored phone_e164 is on the do-not-call list, in the same round trip,
-- and the owner of its callback (invisible, migration 0015); its number's contact_version and
-- contact_attempts and contact_consents (rules.compliance.contact_caps; NULL when the number has none), with
-- the lead's consent as the caps read it (contact_consent, contact_consent_at), read without a lock: the
-- claim writes them back only over the version it read, so claims of one number run one at a time. `number_in_call`: the oli_id of another lead with this number
-- that is live now (ix_sales_master_phone_e164), or NULL (one live call per number).
SELECT m.*, m.callback_agent_id, m.region, m.postal_code, m.consent_type, m.caller_id, EXISTS (SELECT 1 FROM dialerapi_dnc AS d WHERE d.phone = m.phone_e164) AS listed,
       m.phone_e164 AS contact_for,
       (SELECT n.version FROM dialerapi_contact_numbers AS n WHERE n.phone_e164 = m.phone_e164) AS contact_version,
       (SELECT n.attempts FROM dialerapi_contact_numbers AS n WHERE n.phone_e164 = m.phone_e164) AS contact_attempts,
       (SELECT n.consents FROM dialerapi_contact_numbers AS n WHERE n.phone_e164 = m.phone_e164) AS contact_consents,
       m.consent_type AS contact_consent, m.consent_at AS contact_consent_at,
       (SELECT o.oli_id FROM sales_master AS o
        WHERE o.phone_e164 = m.phone_e164 AND o.isReserved = 1 AND o.id <> m.id ORDER BY o.id LIMIT 1) AS number_in_call
FROM sales_master AS m WHERE m.id = :id AND m.isReserved = 0 FOR UPDATE SKIP LOCKED;

-- name: lock_unreserved_waiting(id)^
-- The same, waiting for a transaction that holds the row: a locking read then sees its latest
-- committed version (reserved by a claim, or still free after a push).
SELECT m.*, m.callback_agent_id, m.region, m.postal_code, m.consent_type, m.caller_id, EXISTS (SELECT 1 FROM dialerapi_dnc AS d WHERE d.phone = m.phone_e164) AS listed,
       m.phone_e164 AS contact_for,
       (SELECT n.version FROM dialerapi_contact_numbers AS n WHERE n.phone_e164 = m.phone_e164) AS contact_version,
       (SELECT n.attempts FROM dialerapi_contact_numbers AS n WHERE n.phone_e164 = m.phone_e164) AS contact_attempts,
       (SELECT n.consents FROM dialerapi_contact_numbers AS n WHERE n.phone_e164 = m.phone_e164) AS contact_consents,
       m.consent_type AS contact_consent, m.consent_at AS contact_consent_at,
       (SELECT o.oli_id FROM sales_master AS o
        WHERE o.phone_e164 = m.phone_e164 AND o.isReserved = 1 AND o.id <> m.id ORDER BY o.id LIMIT 1) AS number_in_call
FROM sales_master AS m WHERE m.id = :id AND m.isReserved = 0 FOR UPDATE;

-- name: lock_lead_skip_locked(oli_id)^
SELECT m.*, m.callback_agent_id, m.region, m.postal_code, m.consent_type, m.caller_id, EXISTS (SELECT 1 FROM dialerapi_dnc AS d WHERE d.phone = m.phone_e164) AS listed,
       m.phone_e164 AS contact_for,
       (SELECT n.version FROM dialerapi_contact_numbers AS n WHERE n.phone_e164 = m.phone_e164) AS contact_version,
       (SELECT n.attempts FROM dialerapi_contact_numbers AS n WHERE n.phone_e164 = m.phone_e164) AS contact_attempts,
       (SELECT n.consents FROM dialerapi_contact_numbers AS n WHERE n.phone_e164 = m.phone_e164) AS contact_consents,
       m.consent_type AS contact_consent, m.consent_at AS contact_consent_at,
       (SELECT o.oli_id FROM sales_master AS o
        WHERE o.phone_e164 = m.phone_e164 AND o.isReserved = 1 AND o.id <> m.id ORDER BY o.id LIMIT 1) AS number_in_call
FROM sales_master AS m WHERE m.oli_id = :oli_id FOR UPDATE SKIP LOCKED;

-- name: agent_has_missed_activity(agent_id, oli_id)$
SELECT EXISTS (SELECT 1 FROM sales_missed_activities
               WHERE agent_id = :agent_id AND oli_id = :oli_id AND cleared_at IS NULL);

-- name: set_availability(agent_id, panel_active, ami_idle, set_wrapup, wrapup_until)!
-- NULL panel_active / ami_idle keep the current value; wrapup_until is written only with set_wrapup.
UPDATE sales_agents
SET panel_active = COALESCE(:panel_active, panel_active), ami_idle = COALESCE(:ami_idle, ami_idle),
    wrapup_until = IF(:set_wrapup, :wrapup_until, wrapup_until)
WHERE id = :agent_id;

-- name: available_agents(ahead)
-- Agents who could take a call if nothing else is known about the time (the caller checks wrap-up),
-- with their skills and allowed priorities (';'-separated). With :ahead, agents on a call too.
SELECT a.*, GROUP_CONCAT(s.form_type ORDER BY s.form_type SEPARATOR ';') AS skills,
       (SELECT GROUP_CONCAT(p.priority_id ORDER BY p.priority_id SEPARATOR ';')
          FROM sales_agent_priorities AS p WHERE p.agent_id = a.id) AS priorities
FROM sales_agents AS a
JOIN sales_agent_skills AS s ON s.agent_id = a.id
WHERE a.panel_active = 1 AND a.pause_code IS NULL AND (a.ami_idle = 1 OR :ahead)
GROUP BY a.id
ORDER BY a.id;

-- name: lead_exists(oli_id)$
SELECT EXISTS (SELECT 1 FROM sales_master WHERE oli_id = :oli_id);

-- name: free_skills(now, ahead, form_type, enforce, today, period, other_period, other_period_forms, day_from, edge_minute, edge_hour, edge_hour_end, connect_seconds, connect_seconds_by_form)
-- Per skill (only :form_type when not NULL) of the agents free to take a predictive call: whether
-- one of them allows every priority (no priority list), and the priorities they allow (';'-separated).
-- Free is claim rule 1 as dialstate.unavailable_reason says it (tests/test_claims.py holds the two
-- to the same answer for every combination of the columns); with :ahead a call or a wrap-up does
-- not count against an agent. One row per skill, however many agents: a predictive claim's cost
-- does not grow with the floor.
-- With :enforce (rules.compliance.abandons), the skill's abandon counts in the same statement,
-- each "answered;abandoned;0;machines" (machines: answering machines detected): today's and the period's (rules.compliance.abandons says which rows),
-- and its pending predictive calls; each a primary-key range of a few rows, read only when enforced.
-- The period is the form_type's campaign's: :other_period for :other_period_forms, each
-- in a statement of its own, so that a constant period still picks one range of the counts' key.
-- A pending call's connect is late past its campaign's seconds: :connect_seconds_by_form, a JSON
-- array of {form_type, seconds} for the campaigns that differ from the floor's :connect_seconds; its
-- form_type is read in the tables' collation, which a database's default need not be. Looked up
-- only for a live call an agent has taken (floor.sql floor_calls joins it: its rows are the calls).
SELECT s.form_type, MAX(p.agent_id IS NULL) AS all_priorities,
       GROUP_CONCAT(DISTINCT p.priority_id ORDER BY p.priority_id SEPARATOR ';') AS priorities,
       IF(:enforce, (SELECT CONCAT(COALESCE(SUM(c.answered), 0), ';', COALESCE(SUM(c.abandoned), 0), ';0;',
                                   COALESCE(SUM(c.machines), 0))
                     FROM dialerapi_abandon_counts AS c
                     WHERE c.grain = 'd' AND c.form_type = s.form_type AND c.starts_at = :today), NULL) AS today,
       COALESCE(
         IF(:enforce AND s.form_type NOT IN :other_period_forms,
            (SELECT CONCAT(COALESCE(SUM(c.answered), 0), ';', COALESCE(SUM(c.abandoned), 0), ';0;',
                           COALESCE(SUM(c.machines), 0))
             FROM dialerapi_abandon_counts AS c
             WHERE c.form_type = s.form_type
               AND ((:period = '30d' AND c.grain = 'd' AND c.starts_at >= :day_from)
                    OR (:period = '24h' AND c.grain = 'h' AND c.starts_at > :edge_hour)
                    OR (:period = '24h' AND c.grain = 'm' AND c.starts_at >= :edge_minute
                        AND c.starts_at < :edge_hour_end))), NULL),
         IF(:enforce AND s.form_type IN :other_period_forms,
            (SELECT CONCAT(COALESCE(SUM(c.answered), 0), ';', COALESCE(SUM(c.abandoned), 0), ';0;',
                           COALESCE(SUM(c.machines), 0))
             FROM dialerapi_abandon_counts AS c
             WHERE c.form_type = s.form_type
               AND ((:other_period = '30d' AND c.grain = 'd' AND c.starts_at >= :day_from)
                    OR (:other_period = '24h' AND c.grain = 'h' AND c.starts_at > :edge_hour)
                    OR (:other_period = '24h' AND c.grain = 'm' AND c.starts_at >= :edge_minute
                        AND c.starts_at < :edge_hour_end))), NULL)) AS period,
       IF(:enforce, (SELECT COUNT(*) FROM sales_master AS m
                     WHERE m.dial_status = 'Calling' AND m.isReserved = 1 AND m.form_type = s.form_type
                       AND m.predictive_call = 1
                       AND (m.agent_connected_at IS NULL OR m.agent_connected_at < m.reserved_at
                            OR TIMESTAMPDIFF(SECOND, m.call_answered_at, m.agent_connected_at)
                               > COALESCE((SELECT own.seconds
                                           FROM JSON_TABLE(:connect_seconds_by_form, '$[*]' COLUMNS (
                                                  form_type VARCHAR(64) CHARACTER SET utf8mb4
                                                    COLLATE utf8mb4_unicode_ci PATH '$.form_type',
                                                  seconds INT PATH '$.seconds')) AS own
                                           WHERE own.form_type = s.form_type), :connect_seconds))),
          NULL) AS pending
FROM sales_agents AS a
JOIN sales_agent_skills AS s ON s.agent_id = a.id
LEFT JOIN sales_agent_priorities AS p ON p.agent_id = a.id
WHERE a.panel_active = 1 AND (a.pause_code IS NULL OR a.pause_code = '') AND a.outbound_blocked = 0
  AND (:ahead OR (a.ami_idle = 1 AND (a.wrapup_until IS NULL OR a.wrapup_until <= :now)))
  AND (:form_type IS NULL OR s.form_type = :form_type)
GROUP BY s.form_type
ORDER BY s.form_type;

-- name: set_agent_claim(agent_id, lead_id, reservation_id)!
-- The lead a claim was made for the agent (its row is locked by lock_agent): the board shows the
-- lead's campaign while this reservation stays the lead's live one (migration 0021).
UPDATE sales_agents SET claimed_lead_id = :lead_id, claimed_reservation_id = :reservation_id WHERE id = :agent_id;

-- name: refer_to_claim_gate(id)!
-- The locked lead refers to the claim gate before its campaign's state is read (migration 0024):
-- the foreign key's check holds the gate row shared until commit, and the write set carries a
-- reference to it, which a campaign change on another Galera node deletes (campaigns.check_locked).
UPDATE sales_master SET claim_gate = 1 WHERE id = :id;

-- name: leave_claim_gate(id)!
-- ... and no longer refers to it: the reference stays in the write set, and no row keeps one.
UPDATE sales_master SET claim_gate = NULL WHERE id = :id;

-- name: return_call_lead(phone_e164, dialed)^
-- The lead a return call from :phone_e164 is about: the one whose latest call presented :dialed
-- (the call records), else the customer's most recent lead (its last attempt, else its push);
-- ix_sales_master_phone_e164, then each of those leads' calls (ix_sales_call_attempts_lead).
SELECT m.oli_id FROM sales_master AS m
LEFT JOIN sales_call_attempts AS a ON a.lead_id = m.id AND a.caller_id = :dialed
WHERE m.phone_e164 = :phone_e164
ORDER BY a.id IS NULL, a.id DESC, COALESCE(m.last_attempt_at, m.created_at) DESC, m.id DESC
LIMIT 1;
