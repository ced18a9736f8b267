-- Tenant isolation in the database: every table holding an organization's
-- rows shows a session only the rows of the organization in its
-- outboxd.org setting. The API runs its queries as outboxd_tenant, which is
-- subject to these policies and sets outboxd.org to the caller's
-- organization (internal/platform/dbutil.TenantPool); a query that forgets its
-- organization filter then sees nothing of another organization. The
-- owner of the tables (the migrating role, used by the workers, which work
-- for every organization) is not subject to them.
DO $$
BEGIN
    CREATE ROLE outboxd_tenant NOLOGIN;
EXCEPTION WHEN duplicate_object THEN
    NULL; -- the role is per cluster; another database created it
END
$$;

DO $$
BEGIN
    EXECUTE format('GRANT outboxd_tenant TO %I', current_user);
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO outboxd_tenant', current_schema());
    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA %I TO outboxd_tenant', current_schema());
    EXECUTE format('GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA %I TO outboxd_tenant', current_schema());
    EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %I GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO outboxd_tenant', current_schema());
    EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %I GRANT USAGE, SELECT ON SEQUENCES TO outboxd_tenant', current_schema());
END
$$;

ALTER TABLE action_invocations ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON action_invocations
    USING (organization_id = current_setting('outboxd.org', true));
ALTER TABLE invocation_events ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON invocation_events
    USING (organization_id = current_setting('outboxd.org', true));
ALTER TABLE action_modes ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON action_modes
    USING (organization_id = current_setting('outboxd.org', true));
ALTER TABLE credentials ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON credentials
    USING (organization_id = current_setting('outboxd.org', true));
ALTER TABLE org_connectors ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON org_connectors
    USING (organization_id = current_setting('outboxd.org', true));
ALTER TABLE quiet_hours ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON quiet_hours
    USING (organization_id = current_setting('outboxd.org', true));
ALTER TABLE do_not_contact ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON do_not_contact
    USING (organization_id = current_setting('outboxd.org', true));
ALTER TABLE invoke_rate_windows ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON invoke_rate_windows
    USING (organization_id = current_setting('outboxd.org', true));
