-- Claims that cost the same at any hour with the calling window on.
--
-- Two generated columns, STORED and INVISIBLE (SELECT * and INSERT without a column list, as the
-- dialing engine and reports may send them, see the table as before; every writer keeps them
-- current, the engine's own SQL included):
-- claim_bucket, the lead's place in claim order (lead-intake-api.md "Claim and retry rules" 3):
--   1 Callback, 2 Pending, 3 Abandoned, 4 Not Connected; NULL when no claim may take it (reserved,
--   listed do-not-call, or any other dial_status).
-- claim_due, the time its bucket waits on: callback_scheduled_at for a Callback, next_retry_at
--   for the others.
-- And two indexes on them:
-- ix_claim_due (form_type, claim_bucket, claim_due, id, call_zone_id): a form_type's claimable
--   leads in claim order, every bucket in one range read; call_zone_id trails, so a claim sees
--   which of them are in open zones inside the index.
-- ix_claim_zone (form_type, call_zone_id, claim_bucket, claim_due, id): the same per call zone,
--   so a claim reads each open zone's first leads and never passes a closed zone's by.
-- STORED, not VIRTUAL: InnoDB's purge leaves the old entries of an index on a virtual column
-- behind, delete-marked, and a claim reading past them slowed tenfold after a few thousand claims
-- (docs/compliance/do-not-call.md "Do-not-call and calling hours"). Adding a stored column rebuilds the table: writes wait
-- while it runs (20 s for 1,000,000 leads on this project's machine), reads go on.
-- The previous release's claim reads ix_claim_retry_v2 and ix_claim_callback_v2, kept here so it
-- still serves on this schema while hosts upgrade one at a time; a later migration drops them.
-- depends: 0012.do-not-call

ALTER TABLE sales_master
  ADD COLUMN claim_bucket TINYINT GENERATED ALWAYS AS (
    CASE WHEN isReserved = 0 AND do_not_call = 0 THEN
      CASE dial_status WHEN 'Callback' THEN 1 WHEN 'Pending' THEN 2 WHEN 'Abandoned' THEN 3
                       WHEN 'Not Connected' THEN 4 END
    END) STORED INVISIBLE,
  ADD COLUMN claim_due DATETIME GENERATED ALWAYS AS (
    IF(dial_status = 'Callback', callback_scheduled_at, next_retry_at)) STORED INVISIBLE,
  ADD KEY ix_claim_due (form_type, claim_bucket, claim_due, id, call_zone_id),
  ADD KEY ix_claim_zone (form_type, call_zone_id, claim_bucket, claim_due, id),
  ALGORITHM=COPY, LOCK=SHARED;
