-- Webhook endpoints of an organization. The signing secret is stored
-- sealed (AES-256-GCM with secrets.key, bound to the endpoint id).
CREATE TABLE webhooks (
    id              uuid        PRIMARY KEY,
    organization_id text        NOT NULL,
    url             text        NOT NULL,
    events          text[]      NOT NULL,
    description     text        NOT NULL DEFAULT '',
    secret_sealed   bytea       NOT NULL,
    enabled         boolean     NOT NULL DEFAULT true,
    -- failing_since is the first failed attempt since the last success.
    failing_since   timestamptz,
    disabled_at     timestamptz,
    disabled_reason text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhooks_org ON webhooks (organization_id, created_at);

-- One notice to one endpoint. Its id is the webhook-id header, the same on
-- every attempt.
CREATE TABLE webhook_deliveries (
    id               uuid        PRIMARY KEY,
    webhook_id       uuid        NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    organization_id  text        NOT NULL,
    event_id         bigint      NOT NULL,
    event_type       text        NOT NULL,
    payload          text        NOT NULL,
    status           text        NOT NULL DEFAULT 'pending',
    attempts         integer     NOT NULL DEFAULT 0,
    last_status_code integer,
    last_error       text,
    last_latency_ms  integer,
    attempt_log      jsonb       NOT NULL DEFAULT '[]',
    next_attempt_at  timestamptz,
    delivered_at     timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (webhook_id, event_id)
);
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, created_at DESC, id);

-- The API manages endpoints as outboxd_tenant (migration 009): it sees and
-- writes only its organization's. The relay and the deliveries run as the
-- owner, for every organization.
ALTER TABLE webhooks ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON webhooks
    USING (organization_id = current_setting('outboxd.org', true));
ALTER TABLE webhook_deliveries ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON webhook_deliveries
    USING (organization_id = current_setting('outboxd.org', true));

-- The relay's position in invocation_events (see migration 010): it turns
-- the events after it into deliveries and moves it in the same
-- transaction, so each event is relayed once. It starts now: events
-- written before webhooks existed are not delivered.
CREATE TABLE webhook_relay (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    after_xid xid8    NOT NULL,
    after_id  bigint  NOT NULL
);
INSERT INTO webhook_relay (after_xid, after_id) VALUES (pg_snapshot_xmin(pg_current_snapshot()), 0);
