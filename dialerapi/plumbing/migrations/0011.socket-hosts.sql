-- The agent-socket capacity of each host: every process that serves /ws writes its
-- host's row every few seconds, so /health and /metrics, answered by any host, show the open
-- sockets, the capacity left and the sockets refused of the whole floor. `host` is
-- "hostname/bind" of one gunicorn; `workers` the open sockets per worker process (JSON list);
-- `refused` counts since that gunicorn started; `updated_at` is wall-clock DB_TIMEZONE time of the
-- service clock: a row not refreshed for a minute is a host gone, left out and pruned.
-- depends: 0010.job-lease

CREATE TABLE dialerapi_socket_hosts (
  host VARCHAR(255) NOT NULL PRIMARY KEY,
  open_sockets INT NOT NULL,
  capacity INT NOT NULL,
  refused BIGINT NOT NULL,
  workers VARCHAR(2000) NOT NULL,
  updated_at DATETIME NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci;
