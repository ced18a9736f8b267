-- Feeds (event streams, the webhook and Slack relays) read only the events
-- that make a notice: a request for approval, a decision, an end. Two of
-- an allowed action's three events (created approved, started) make none,
-- yet each had its entries in both feed indexes: four index entries per
-- action that nothing read. The feed indexes now hold only notices (the
-- events the announcing trigger of migration 008 announces); the feed
-- queries repeat the predicate so the planner can use them.
DROP INDEX invocation_events_org_xid;
DROP INDEX invocation_events_xid;
CREATE INDEX invocation_events_org_xid ON invocation_events (organization_id, xid, id)
    WHERE (type = 'created' AND to_status = 'pending')
       OR type IN ('approved', 'denied', 'expired', 'completed', 'failed', 'skipped', 'cancelled');
CREATE INDEX invocation_events_xid ON invocation_events (xid, id)
    WHERE (type = 'created' AND to_status = 'pending')
       OR type IN ('approved', 'denied', 'expired', 'completed', 'failed', 'skipped', 'cancelled');
