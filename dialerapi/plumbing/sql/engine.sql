-- The engine API's replies (rules.dialing.engine), by request key. Callers own the transaction.

-- name: get_engine_reply(request_key)^
SELECT fingerprint, reply FROM dialerapi_engine_replies WHERE request_key = :request_key;

-- name: reserve_engine_reply(request_key, fingerprint, created_at)!
-- A concurrent duplicate waits here on the row lock, then fails on the key once this one commits.
INSERT INTO dialerapi_engine_replies (request_key, fingerprint, created_at)
VALUES (:request_key, :fingerprint, :created_at);

-- name: store_engine_reply(request_key, reply)!
UPDATE dialerapi_engine_replies SET reply = :reply WHERE request_key = :request_key;

-- name: prune_engine_replies(before)!
DELETE FROM dialerapi_engine_replies WHERE created_at < :before;
