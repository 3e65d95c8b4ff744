-- Agent events (decisions.md D9): a transactional outbox. A change that affects an agent's
-- blocked flag or missed-activity list writes a row here in its own transaction; every process
-- tails the table and pushes fresh snapshots to the sockets of those agents.
-- depends: 0002.settle-and-sweep

CREATE TABLE dialerapi_outbox (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  agent_id BIGINT NOT NULL,
  created_at DATETIME NOT NULL,
  KEY ix_dialerapi_outbox_created (created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
