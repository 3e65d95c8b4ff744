-- A ringing call shows its campaign on the board: a progressive claim or a
-- redial names its agent, but until the customer answers and the agent is connected (a missed
-- activity opens) nothing tied the call to the agent.
--
-- sales_agents.claimed_lead_id: sales_master.id of the lead last claimed for the agent
--   (rules.dialing.claims.claim_next, claim_lead).
-- sales_agents.claimed_reservation_id: that claim's reservation_id. The board shows the lead's
--   form_type only while this is still the lead's live reservation, so nothing has to clear them:
--   a settle or a release only tells the board (dialstate.end_call).
-- ix_sales_agents_claimed_lead: the agent of a lead's claim, read at the end of every call.
-- INVISIBLE, added in place: the engine's SELECT * and column-less INSERT see the table as before.
-- Expand only: the previous release's claims name neither column and its board reads neither, so
-- both releases serve a rolling upgrade on this schema (its ringing calls show no campaign).
-- depends: 0020.socket-fanout

ALTER TABLE sales_agents ADD COLUMN claimed_lead_id BIGINT NULL INVISIBLE,
  ADD COLUMN claimed_reservation_id CHAR(36) NULL INVISIBLE, ALGORITHM=INSTANT;
ALTER TABLE sales_agents ADD KEY ix_sales_agents_claimed_lead (claimed_lead_id), ALGORITHM=INPLACE, LOCK=NONE;
