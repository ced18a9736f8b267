ALTER TABLE invocation_events DROP COLUMN xid;
