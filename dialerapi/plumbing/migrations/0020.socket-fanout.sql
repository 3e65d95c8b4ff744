-- No socket holds up another: each socket host says how far its fan-out is behind
-- and how many sockets it closed for falling behind, for /health and /metrics.
--
-- dialerapi_socket_hosts.fanout_lag_ms: how long ago the host's outbox thread last finished a
--   pass (a poll and its sends), milliseconds, as its heartbeat thread saw it; NULL from a release
--   that does not measure it.
-- dialerapi_socket_hosts.too_slow: sockets the host closed (1013, `too_slow`) since its start
--   because their client fell behind by more than WS_SEND_QUEUE_BYTES.
-- Expand only, added in place: the previous release's heartbeat, which names neither column,
-- writes NULL and 0, so both releases serve a rolling upgrade on this schema.
-- depends: 0019.contact-caps

ALTER TABLE dialerapi_socket_hosts ADD COLUMN fanout_lag_ms INT UNSIGNED NULL DEFAULT NULL,
  ADD COLUMN too_slow INT UNSIGNED NOT NULL DEFAULT 0, ALGORITHM=INSTANT;
