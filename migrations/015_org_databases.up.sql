-- Postgres databases an organization registers as read-only sources
-- (source id 'database:<id>'). The connection URL is not here: it is a
-- secret, sealed in credentials under integration 'database:<id>'. host and
-- database are what views show of it (no user, no password, no parameters).
CREATE TABLE org_databases (
    id                   uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    organization_id      text        NOT NULL,
    name                 text        NOT NULL,
    host                 text        NOT NULL,
    database             text        NOT NULL,
    statement_timeout_ms integer     NOT NULL CHECK (statement_timeout_ms > 0),
    max_rows             integer     NOT NULL CHECK (max_rows > 0),
    created_by           text        NOT NULL,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now(),
    UNIQUE (organization_id, name)
);

-- The API manages databases as outboxd_tenant (migration 009): it sees and
-- writes only its organization's. The workers read them as the owner.
ALTER TABLE org_databases ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON org_databases
    USING (organization_id = current_setting('outboxd.org', true));
