-- The floor's caller IDs (rules.caller_ids, migration 0027). Callers own the transaction.

-- name: lock_caller_id(number)^
SELECT id, number, country, area_prefix, regions, state, daily_cap, presented_day, presented_today,
       last_used_at_utc, retired_at_utc, note, created_at_utc, updated_at_utc, updated_by
FROM dialerapi_caller_ids WHERE number = :number FOR UPDATE;

-- name: insert_caller_id(number, country, area_prefix, regions, state, daily_cap, note, now_utc, updated_by)!
INSERT INTO dialerapi_caller_ids (number, country, area_prefix, regions, state, daily_cap, note, created_at_utc,
                                  updated_at_utc, updated_by)
VALUES (:number, :country, :area_prefix, :regions, :state, :daily_cap, :note, :now_utc, :now_utc, :updated_by);

-- name: update_caller_id(id, state, daily_cap, note, retired_at_utc, now_utc, updated_by)!
-- The number and its pools' rows, which keep its state and cap for the claim's read.
UPDATE dialerapi_caller_ids AS c LEFT JOIN dialerapi_caller_id_pools AS p ON p.caller_id = c.id
SET c.state = :state, c.daily_cap = :daily_cap, c.note = :note, c.retired_at_utc = :retired_at_utc,
    c.updated_at_utc = :now_utc, c.updated_by = :updated_by, p.state = :state, p.daily_cap = :daily_cap
WHERE c.id = :id;

-- name: caller_id_pools(caller_id)
SELECT pool FROM dialerapi_caller_id_pools WHERE caller_id = :caller_id ORDER BY pool;

-- name: remove_caller_id_pools(caller_id)!
DELETE FROM dialerapi_caller_id_pools WHERE caller_id = :caller_id;

-- name: add_caller_id_pools*!
-- (pool, caller_id, number, area_prefix, region, state, daily_cap, presented_rank): the number's
-- row in each pool.
INSERT INTO dialerapi_caller_id_pools (pool, caller_id, number, area_prefix, region, state, daily_cap, presented_rank)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s);

-- name: insert_caller_id_change(caller_id, action, now_utc, changed_by, old, new)!
INSERT INTO dialerapi_caller_id_changes (caller_id, action, changed_at_utc, changed_by, old, new)
VALUES (:caller_id, :action, :now_utc, :changed_by, :old, :new);

-- name: caller_id_changes(caller_id, max_rows)
SELECT id, action, changed_at_utc, changed_by, old, new FROM dialerapi_caller_id_changes
WHERE caller_id = :caller_id ORDER BY id DESC LIMIT :max_rows;

-- name: caller_ids_page(pool, any_pool, state, any_state, after, max_rows)
-- The floor's numbers in number order after :after (0 for the first page), of one pool and state
-- or all, each with its pools (`pools`, ';'-joined).
SELECT c.id, c.number, c.country, c.area_prefix, c.regions, c.state, c.daily_cap, c.presented_day,
       c.presented_today, c.last_used_at_utc, c.retired_at_utc, c.note, c.created_at_utc, c.updated_at_utc,
       c.updated_by,
       (SELECT GROUP_CONCAT(p.pool ORDER BY p.pool SEPARATOR ';') FROM dialerapi_caller_id_pools p
        WHERE p.caller_id = c.id) AS pools
FROM dialerapi_caller_ids c
WHERE c.number > :after AND (:any_state OR c.state = :state)
  AND (:any_pool OR EXISTS (SELECT 1 FROM dialerapi_caller_id_pools p WHERE p.caller_id = c.id AND p.pool = :pool))
ORDER BY c.number LIMIT :max_rows;

-- name: caller_id_directory(pool)
-- The area prefixes and regions a pool's numbers have (rules.caller_ids.choice.directory).
SELECT DISTINCT area_prefix, region FROM dialerapi_caller_id_pools WHERE pool = :pool;

-- The eligible numbers of one tier of a pool, least presented today first, ties to the lowest id
-- (rules.caller_ids.choice): read from one index in presented_rank order, so a claim reads a few
-- entries of a pool of thousands. A rank under :day_key + the cap is under the cap today (a rank
-- under :day_key was not presented today at all); the count checks the number's own row again.
-- Each row also carries the lead's campaign state as campaigns.sql's campaign_state reads it
-- (after the claim gate's locks): one round trip for both (docs/performance.md).

-- name: caller_ids_of_area_prefix(form_type, pool, area_prefix, day_key, floor_cap, max_rows)
SELECT (SELECT state FROM dialerapi_campaigns WHERE form_type = :form_type) AS campaign_state, p.number
FROM dialerapi_caller_id_pools AS p FORCE INDEX (ix_dialerapi_caller_id_pools_area)
WHERE p.pool = :pool AND p.area_prefix = :area_prefix AND p.state = 'active'
  AND p.presented_rank < :day_key + COALESCE(p.daily_cap, :floor_cap)
ORDER BY p.presented_rank, p.caller_id LIMIT :max_rows;

-- name: caller_ids_of_region(form_type, pool, region, day_key, floor_cap, max_rows)
SELECT (SELECT state FROM dialerapi_campaigns WHERE form_type = :form_type) AS campaign_state, p.number
FROM dialerapi_caller_id_pools AS p FORCE INDEX (ix_dialerapi_caller_id_pools_region)
WHERE p.pool = :pool AND p.region = :region AND p.state = 'active'
  AND p.presented_rank < :day_key + COALESCE(p.daily_cap, :floor_cap)
ORDER BY p.presented_rank, p.caller_id LIMIT :max_rows;

-- name: caller_ids_of_pool(form_type, pool, day_key, floor_cap, max_rows)
SELECT (SELECT state FROM dialerapi_campaigns WHERE form_type = :form_type) AS campaign_state, p.number
FROM dialerapi_caller_id_pools AS p FORCE INDEX (ix_dialerapi_caller_id_pools_rank)
WHERE p.pool = :pool AND p.state = 'active' AND p.presented_rank < :day_key + COALESCE(p.daily_cap, :floor_cap)
ORDER BY p.presented_rank, p.caller_id LIMIT :max_rows;

-- name: take_caller_id(lead_id, number, today, day_key, floor_cap, now_utc, lock_wait_seconds)!
-- Count a call of the locked lead :lead_id against the number, on its row and its pools' ranks,
-- when it is still active and under its cap, and take the lead out of the claim gate
-- (claims.sql leave_claim_gate; the claim's gate locks stay until it commits): one write of the
-- claim instead of two (docs/performance.md). Rows changed: the lead's while it referred to the
-- gate, and the number's and its pools' when the call was counted (and locked until the claim
-- commits). A number another claim holds answers error 1205 after lock_wait_seconds (0: at once,
-- so claims at once spread over the pool's numbers instead of queueing on one); the whole statement
-- is undone. SIMULTANEOUS_ASSIGNMENT: every assignment reads the row as it was (MariaDB gives no
-- order to a multi-table UPDATE's assignments otherwise).
SET STATEMENT innodb_lock_wait_timeout = :lock_wait_seconds,
              sql_mode = 'STRICT_TRANS_TABLES,SIMULTANEOUS_ASSIGNMENT' FOR
UPDATE sales_master AS m
LEFT JOIN dialerapi_caller_ids AS c
  ON c.number = :number AND c.state = 'active'
  AND IF(c.presented_day = :today, c.presented_today, 0) < COALESCE(c.daily_cap, :floor_cap)
LEFT JOIN dialerapi_caller_id_pools AS p ON p.caller_id = c.id
SET m.claim_gate = NULL, c.presented_today = IF(c.presented_day = :today, c.presented_today + 1, 1),
    p.presented_rank = IF(p.presented_rank >= :day_key, p.presented_rank + 1, :day_key + 1),
    c.last_used_at_utc = :now_utc, c.presented_day = :today
WHERE m.id = :lead_id;

-- name: give_back_caller_id(number, day, day_key, next_day_key)!
-- An originate that failed rang nobody: its number's count of that day, and its pools' ranks of
-- that day, give the call back.
UPDATE dialerapi_caller_ids AS c LEFT JOIN dialerapi_caller_id_pools AS p ON p.caller_id = c.id
SET c.presented_today = c.presented_today - 1,
    p.presented_rank = IF(p.presented_rank > :day_key AND p.presented_rank < :next_day_key,
                          p.presented_rank - 1, p.presented_rank)
WHERE c.number = :number AND c.presented_day = :day AND c.presented_today > 0;

-- name: start_caller_id_day(day_key)!
-- The pools' rows not presented yet today rank as none today, so a claim finds them in its
-- index's order (rules.caller_ids.pools.start_day).
UPDATE dialerapi_caller_id_pools SET presented_rank = :day_key WHERE presented_rank < :day_key;

-- name: caller_id_pools_today(today, floor_cap)
-- Each pool's numbers today: how many are active (and of those, at their cap), flagged and
-- retired, and the calls the active ones may still present today (`headroom`) of their caps' sum.
SELECT p.pool,
       SUM(c.state = 'active') AS active,
       SUM(c.state = 'active' AND IF(c.presented_day = :today, c.presented_today, 0) >= COALESCE(c.daily_cap, :floor_cap))
         AS at_cap,
       SUM(c.state = 'flagged') AS flagged, SUM(c.state = 'retired') AS retired,
       SUM(IF(c.state = 'active', COALESCE(c.daily_cap, :floor_cap), 0)) AS capacity,
       SUM(IF(c.state = 'active', GREATEST(0, COALESCE(c.daily_cap, :floor_cap)
                                          - IF(c.presented_day = :today, c.presented_today, 0)), 0)) AS headroom
FROM dialerapi_caller_id_pools AS p JOIN dialerapi_caller_ids AS c ON c.id = p.caller_id
GROUP BY p.pool ORDER BY p.pool;
