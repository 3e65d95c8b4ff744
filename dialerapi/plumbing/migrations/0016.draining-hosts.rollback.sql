ALTER TABLE dialerapi_socket_hosts DROP COLUMN draining;
