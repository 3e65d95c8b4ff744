-- The reservation a claim makes, so that one an engine never settles does not strand its lead
-- (the sweep releases reservations older than RESERVATION_LEASE_SECONDS) and a settle that comes
-- after its reservation was released is told so instead of settling a later call of the same lead.
-- reservation_id: a UUID minted by every claim, answered to the engine, cleared by settle and by a
-- release. reserved_at: when the claim was made, wall-clock DB_TIMEZONE (decisions.md D2). A live
-- row written by an engine in SQL without reserved_at is never released by the lease, only by hand
-- (`dialerapi release`).
-- depends: 0007.engine-replies

ALTER TABLE sales_master
  ADD COLUMN reservation_id CHAR(36) NULL AFTER isReserved,
  ADD COLUMN reserved_at DATETIME NULL AFTER reservation_id;
