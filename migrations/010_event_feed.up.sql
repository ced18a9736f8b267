-- xid is the transaction that wrote the event. An event's id is taken when
-- its row is inserted, not when its transaction commits, so a reader can
-- see id 12 committed while id 11 is still in flight. Feeds therefore read
-- in (xid, id) order and only up to the oldest transaction still running
-- (pg_snapshot_xmin): every transaction below it has ended, and any event
-- committed later belongs to a transaction at or above it, so it sorts
-- after anything already delivered. Nothing is missed or repeated.
ALTER TABLE invocation_events ADD COLUMN xid xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX invocation_events_org_xid ON invocation_events (organization_id, xid, id);
CREATE INDEX invocation_events_xid ON invocation_events (xid, id);
