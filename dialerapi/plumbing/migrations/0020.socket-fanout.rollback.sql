ALTER TABLE dialerapi_socket_hosts DROP COLUMN too_slow, DROP COLUMN fanout_lag_ms;
