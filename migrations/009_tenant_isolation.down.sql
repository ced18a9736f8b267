DROP POLICY tenant ON action_invocations;
ALTER TABLE action_invocations DISABLE ROW LEVEL SECURITY;
DROP POLICY tenant ON invocation_events;
ALTER TABLE invocation_events DISABLE ROW LEVEL SECURITY;
DROP POLICY tenant ON action_modes;
ALTER TABLE action_modes DISABLE ROW LEVEL SECURITY;
DROP POLICY tenant ON credentials;
ALTER TABLE credentials DISABLE ROW LEVEL SECURITY;
DROP POLICY tenant ON org_connectors;
ALTER TABLE org_connectors DISABLE ROW LEVEL SECURITY;
DROP POLICY tenant ON quiet_hours;
ALTER TABLE quiet_hours DISABLE ROW LEVEL SECURITY;
DROP POLICY tenant ON do_not_contact;
ALTER TABLE do_not_contact DISABLE ROW LEVEL SECURITY;
DROP POLICY tenant ON invoke_rate_windows;
ALTER TABLE invoke_rate_windows DISABLE ROW LEVEL SECURITY;
DO $$
BEGIN
    EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %I REVOKE ALL ON TABLES FROM outboxd_tenant', current_schema());
    EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %I REVOKE ALL ON SEQUENCES FROM outboxd_tenant', current_schema());
    EXECUTE format('REVOKE ALL ON ALL TABLES IN SCHEMA %I FROM outboxd_tenant', current_schema());
    EXECUTE format('REVOKE ALL ON ALL SEQUENCES IN SCHEMA %I FROM outboxd_tenant', current_schema());
    EXECUTE format('REVOKE USAGE ON SCHEMA %I FROM outboxd_tenant', current_schema());
END
$$;
