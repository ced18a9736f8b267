DROP INDEX invocation_events_org_xid;
DROP INDEX invocation_events_xid;
CREATE INDEX invocation_events_org_xid ON invocation_events (organization_id, xid, id);
CREATE INDEX invocation_events_xid ON invocation_events (xid, id);
