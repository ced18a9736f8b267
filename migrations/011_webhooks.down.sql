DROP TABLE webhook_relay;
DROP TABLE webhook_deliveries;
DROP TABLE webhooks;
