DROP TABLE slack_relay;
DROP TABLE slack_messages;
DROP TABLE slack_settings;
