-- Replies of the engine API (/engine/), kept so that a request the dialing engine retries (after a
-- timeout, a lost connection) is answered as the first time instead of being done twice: a claim
-- retried with its request_id gets the lead it already reserved, a settle sent twice settles once.
-- `request_key` names the request (the operation and its request_id, call_id or oli_id and
-- started_at); `fingerprint` is the SHA-256 of its body, so a key reused for another request is
-- refused. The hourly prune job deletes rows older than a day.
-- depends: 0006.missed-activity-utc

CREATE TABLE dialerapi_engine_replies (
  request_key VARCHAR(200) NOT NULL PRIMARY KEY,
  fingerprint CHAR(64) NOT NULL,
  reply MEDIUMTEXT NULL,
  created_at DATETIME NOT NULL,
  KEY ix_dialerapi_engine_replies_created (created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
