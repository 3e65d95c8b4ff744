-- Lead push (lead-intake-api.md, POST /api/leads). Every value is a parameter: a literal inside
-- VALUES (...) stops PyMySQL's executemany from sending one multi-row statement.

-- name: lock_leads(oli_ids)
-- Lock the rows of these oli_ids in oli_id order, so that overlapping batches lock in one order.
-- The index is forced: on a small table the optimiser prefers a full scan, which locks rows in
-- primary-key order and waits on every row other transactions hold. callback_agent_id: the owner
-- whose personal callback a push ends; do_not_call: whether a listed number is news;
-- phone_number, phone_e164, call_zone_id, region, postal_code and consent_type: the phone facts a push keeps
-- when the number, place and consent are the same.
SELECT id, oli_id, data_id, dial_status, isReserved, callback_agent_id, do_not_call, phone_number, phone_e164,
       call_zone_id, region, postal_code, consent_type
FROM sales_master FORCE INDEX (uq_sales_master_oli_id)
WHERE oli_id IN :oli_ids
ORDER BY oli_id
FOR UPDATE;

-- name: upsert_leads*!
-- One multi-row statement: inserts new oli_ids, and on rows this transaction holds locked and found
-- not live writes the contact fields and the dial-state reset, keeping created_at, and ends a
-- personal callback (callback_agent_id). MySQL counts 1
-- affected row per insert and 2 per update (data_id always changes), which is how the caller
-- notices that a concurrent push inserted a "new" oli_id first. Each row is a tuple in the order of
-- the column list: positional placeholders spare PyMySQL a dict per row, and the last one is the
-- dial-state reset and both stamps as one db.Literal (leads.RESET_COLUMNS), then the
-- customer's place and consent (none when the push gives none).
INSERT INTO sales_master
  (oli_id, data_id, phone_number, client_name, form_type, priority_id, phone_e164, do_not_call,
   call_zone_id, dial_status, disposeRemark, last_dial_result, hangup_by, hangup_cause,
   last_attempt_at, first_attempt_at, next_retry_at, callback_scheduled_at, call_count, isReserved,
   created_at, updated_at, region, postal_code, consent_type, consent_at, consent_source)
VALUES
  (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
ON DUPLICATE KEY UPDATE
  data_id = VALUES(data_id), phone_number = VALUES(phone_number), client_name = VALUES(client_name),
  phone_e164 = VALUES(phone_e164), do_not_call = VALUES(do_not_call), call_zone_id = VALUES(call_zone_id),
  form_type = VALUES(form_type), priority_id = VALUES(priority_id), dial_status = VALUES(dial_status),
  disposeRemark = VALUES(disposeRemark), last_dial_result = VALUES(last_dial_result),
  hangup_by = VALUES(hangup_by), hangup_cause = VALUES(hangup_cause),
  last_attempt_at = VALUES(last_attempt_at), first_attempt_at = VALUES(first_attempt_at),
  next_retry_at = VALUES(next_retry_at), callback_scheduled_at = VALUES(callback_scheduled_at),
  call_count = VALUES(call_count), isReserved = VALUES(isReserved), updated_at = VALUES(updated_at),
  region = VALUES(region), postal_code = VALUES(postal_code), consent_type = VALUES(consent_type),
  consent_at = VALUES(consent_at), consent_source = VALUES(consent_source),
  callback_agent_id = NULL;
