-- What retention deleted of each organization (internal/domain/retention):
-- the last run that deleted any of its rows in a table, and the total. The
-- workers write it as the owner; the operations page reads the caller's
-- organization's rows as outboxd_tenant.
CREATE TABLE retention_runs (
    organization_id text        NOT NULL,
    table_name      text        NOT NULL,
    last_run_at     timestamptz NOT NULL,
    last_deleted    bigint      NOT NULL,
    deleted_total   bigint      NOT NULL,
    PRIMARY KEY (organization_id, table_name)
);
ALTER TABLE retention_runs ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON retention_runs
    USING (organization_id = current_setting('outboxd.org', true));
