-- Engine request keys compared byte for byte. Under utf8mb4_unicode_ci `claim-ci` and
-- `Claim-CI` were one key (the second answered 409 idempotency_conflict), and a settle of lead `CI-a`
-- by oli_id and started_at was taken for one of `CI-A`. VARBINARY compares bytes, with no case or
-- accent folding and no trailing-space padding. 800 bytes hold the longest key in utf8mb4.
-- depends: 0008.reservation-lease

ALTER TABLE dialerapi_engine_replies MODIFY request_key VARBINARY(800) NOT NULL;
