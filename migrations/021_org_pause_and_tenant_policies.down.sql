DO $$
BEGIN
    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I.flow_buckets TO outboxd_tenant', current_schema());
END
$$;
DROP POLICY tenant ON event_listeners;
ALTER TABLE event_listeners DISABLE ROW LEVEL SECURITY;
DROP POLICY tenant ON river_job;
ALTER TABLE river_job DISABLE ROW LEVEL SECURITY;
DROP TABLE org_pauses;
