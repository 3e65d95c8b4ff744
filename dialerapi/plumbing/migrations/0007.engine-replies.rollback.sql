DROP TABLE dialerapi_engine_replies;
