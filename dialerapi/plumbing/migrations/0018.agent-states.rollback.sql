DROP TABLE dialerapi_agent_days;
DROP TABLE dialerapi_agent_states;
