-- A campaign's pause holds through every Galera node.
--
-- On one node a claim reads its lead's campaign state after a shared lock on sales_dialer_config
-- row 1, which every campaign change locks first (0023). Galera replicates no lock: a claim on one
-- node could read "active" and commit after a pause committed on another. Galera certifies write
-- sets by their keys: the write of a foreign key's child carries a reference key on the parent
-- row, which conflicts with the insert or delete of that row from another node (an update does
-- not: Galera takes it as a dependency), and not with other references.
--
-- dialerapi_claim_gates: one row, id 1, which every campaign change deletes and inserts again.
-- sales_master.claim_gate: before a claim reads its locked lead's campaign state it sets this to 1
--   and back to NULL (rules.campaigns.operations.check_locked). The foreign key's check holds the gate row
--   shared until the claim commits, so a change applied on this node meanwhile aborts the claim;
--   and the claim's write set refers to the gate row, so a claim certified after a change from
--   another node that it had not seen fails certification. Either way it runs again (plumbing.db:
--   a deadlock) and reads the new state. Claims among themselves never conflict on it, and no row
--   keeps a reference (a change's delete waits only for the claims in flight on its node).
-- INVISIBLE, added in place: the CRM's and the engine's SELECT * and column-less INSERT see the
-- table as before. The foreign key is added without a check (no row holds a gate) and without a
-- copy: foreign_key_checks is off for this migration's session only.
-- Expand only: the previous release names neither; its claims carry no gate (during a rolling
-- upgrade, its hosts may claim after a pause, as they may on one node: they do not know of
-- campaigns).
-- depends: 0023.campaigns

CREATE TABLE dialerapi_claim_gates (
  id TINYINT UNSIGNED NOT NULL PRIMARY KEY
) ENGINE=InnoDB;

INSERT INTO dialerapi_claim_gates (id) VALUES (1);

ALTER TABLE sales_master ADD COLUMN claim_gate TINYINT UNSIGNED NULL INVISIBLE, ALGORITHM=INSTANT;

SET SESSION foreign_key_checks = 0;

ALTER TABLE sales_master ADD KEY ix_sales_master_claim_gate (claim_gate),
  ADD CONSTRAINT fk_sales_master_claim_gate FOREIGN KEY (claim_gate) REFERENCES dialerapi_claim_gates (id),
  ALGORITHM=INPLACE, LOCK=NONE;

SET SESSION foreign_key_checks = 1;
