DROP TABLE dialerapi_outbox;
