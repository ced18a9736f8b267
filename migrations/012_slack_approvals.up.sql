-- Slack approvals: the organization's channel (over notifications.slack.channel)
-- and the Slack users who may approve, as {"<slack user id>":
-- {"user_id", "role"}}.
CREATE TABLE slack_settings (
    organization_id text        PRIMARY KEY,
    channel         text,
    approvers       jsonb       NOT NULL DEFAULT '{}',
    updated_by      text        NOT NULL,
    updated_at      timestamptz NOT NULL DEFAULT now()
);

-- The approval message posted for a pending invocation, updated in place
-- when it is decided.
CREATE TABLE slack_messages (
    invocation_id   uuid        PRIMARY KEY REFERENCES action_invocations (id) ON DELETE CASCADE,
    organization_id text        NOT NULL,
    channel         text        NOT NULL,
    ts              text        NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE slack_settings ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON slack_settings
    USING (organization_id = current_setting('outboxd.org', true));
ALTER TABLE slack_messages ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON slack_messages
    USING (organization_id = current_setting('outboxd.org', true));

-- The Slack relay's position in invocation_events, as webhook_relay's.
CREATE TABLE slack_relay (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    after_xid xid8    NOT NULL,
    after_id  bigint  NOT NULL
);
INSERT INTO slack_relay (after_xid, after_id) VALUES (pg_snapshot_xmin(pg_current_snapshot()), 0);
