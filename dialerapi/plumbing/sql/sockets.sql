-- The agent-socket capacity of each host (migration 0011).

-- name: write_socket_host(host, open_sockets, capacity, refused, workers, draining, fanout_lag_ms, too_slow, updated_at)!
-- draining (migration 0016): the host got SIGTERM and is handing its sockets over.
-- fanout_lag_ms, too_slow (migration 0020): how far its fan-out is behind, sockets closed
-- for falling behind.
INSERT INTO dialerapi_socket_hosts (host, open_sockets, capacity, refused, workers, draining, fanout_lag_ms,
  too_slow, updated_at)
VALUES (:host, :open_sockets, :capacity, :refused, :workers, :draining, :fanout_lag_ms, :too_slow, :updated_at)
ON DUPLICATE KEY UPDATE open_sockets = VALUES(open_sockets), capacity = VALUES(capacity),
  refused = VALUES(refused), workers = VALUES(workers), draining = VALUES(draining),
  fanout_lag_ms = VALUES(fanout_lag_ms), too_slow = VALUES(too_slow), updated_at = VALUES(updated_at);

-- name: socket_hosts(since)
SELECT host, open_sockets, capacity, refused, workers, draining, fanout_lag_ms, too_slow, updated_at
FROM dialerapi_socket_hosts
WHERE updated_at >= :since ORDER BY host;

-- name: prune_socket_hosts(before)!
DELETE FROM dialerapi_socket_hosts WHERE updated_at < :before;
