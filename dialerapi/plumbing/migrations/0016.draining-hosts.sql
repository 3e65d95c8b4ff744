-- A floor across hosts: a socket host that got SIGTERM says so while it hands its
-- sockets to the others, for /health and /metrics.
--
-- dialerapi_socket_hosts.draining: 1 from the host's drain until its row goes stale.
-- Expand only, added in place: the previous release's heartbeat, which does not name the column,
-- writes 0 (it never drains), so both releases serve a rolling upgrade on this schema.
-- depends: 0015.personal-callbacks

ALTER TABLE dialerapi_socket_hosts ADD COLUMN draining TINYINT(1) NOT NULL DEFAULT 0, ALGORITHM=INSTANT;
