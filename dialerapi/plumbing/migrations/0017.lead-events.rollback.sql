DROP TABLE dialerapi_webhook_attempts;
DROP TABLE dialerapi_webhook_deliveries;
DROP TABLE dialerapi_webhook_endpoints;
DROP TABLE dialerapi_lead_events;
