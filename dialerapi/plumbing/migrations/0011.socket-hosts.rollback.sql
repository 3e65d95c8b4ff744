DROP TABLE dialerapi_socket_hosts;
