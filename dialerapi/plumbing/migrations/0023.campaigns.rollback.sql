DROP TABLE dialerapi_campaign_changes;
DROP TABLE dialerapi_campaigns;
