-- Personal callbacks: a callback the CRM files for a named agent waits for that agent.
--
-- sales_master.callback_agent_id: the owner of the lead's callback (an employee id on the roster),
--   NULL for a callback anyone with the skill may take. INVISIBLE, added in place: the engine's
--   SELECT * and column-less INSERT see the table as before, and nothing is rebuilt. The end of a
--   call of the lead, a push, a newer callback or a disposition clears it (dialstate.write_lead).
-- ix_callback_agent (callback_agent_id, callback_scheduled_at): an agent's personal callbacks in
--   due order, read by the owner's claim, the agent's list and the floor counts. Not on claim_bucket
--   or claim_due, which every push, claim and settle rewrite: an entry changes only when a lead's
--   owner or callback time does. Built in place while writes go on.
-- sales_pending_actions.callbackAgentId: the owner of a callback held while its lead is live,
--   applied with it at settle.
-- sales_dialer_config.personal_callback_fallback_minutes: how long a due personal callback waits
--   for its owner before anyone with the skill may take it; 0 at once, NULL never.
-- Expand only: the previous release serves on this schema (it sees no owner and treats every
-- callback as anyone's).
-- depends: 0014.abandon-rate

ALTER TABLE sales_master ADD COLUMN callback_agent_id BIGINT NULL INVISIBLE, ALGORITHM=INSTANT;
ALTER TABLE sales_master ADD KEY ix_callback_agent (callback_agent_id, callback_scheduled_at),
  ALGORITHM=INPLACE, LOCK=NONE;
ALTER TABLE sales_pending_actions ADD COLUMN callbackAgentId BIGINT NULL, ALGORITHM=INSTANT;
ALTER TABLE sales_dialer_config ADD COLUMN personal_callback_fallback_minutes INT NULL DEFAULT 30, ALGORITHM=INSTANT;
