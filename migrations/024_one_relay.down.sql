-- Each relay's own cursor table again, at the position relay_cursors held
-- (or at the horizon, for a consumer that had no row).
CREATE TABLE webhook_relay (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    after_xid xid8    NOT NULL,
    after_id  bigint  NOT NULL
);
INSERT INTO webhook_relay (after_xid, after_id)
SELECT after_xid, after_id FROM (
    SELECT after_xid, after_id, 0 AS pref FROM relay_cursors WHERE consumer = 'webhook'
    UNION ALL SELECT pg_snapshot_xmin(pg_current_snapshot()), 0, 1
) c ORDER BY pref LIMIT 1;
CREATE TABLE slack_relay (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    after_xid xid8    NOT NULL,
    after_id  bigint  NOT NULL
);
INSERT INTO slack_relay (after_xid, after_id)
SELECT after_xid, after_id FROM (
    SELECT after_xid, after_id, 0 AS pref FROM relay_cursors WHERE consumer = 'slack'
    UNION ALL SELECT pg_snapshot_xmin(pg_current_snapshot()), 0, 1
) c ORDER BY pref LIMIT 1;
DROP TABLE relay_cursors;

DROP TRIGGER invocation_events_announce ON invocation_events;
CREATE TRIGGER invocation_events_announce AFTER INSERT ON invocation_events
    FOR EACH ROW
    WHEN ((NEW.type = 'created' AND NEW.to_status = 'pending')
          OR NEW.type IN ('approved', 'denied', 'expired', 'cancelled', 'completed', 'failed', 'skipped'))
    EXECUTE FUNCTION outboxd_announce_event();

DROP INDEX invocation_events_org_xid;
DROP INDEX invocation_events_xid;
CREATE INDEX invocation_events_org_xid ON invocation_events (organization_id, xid, id)
    WHERE (type = 'created' AND to_status = 'pending')
       OR type IN ('approved', 'denied', 'expired', 'completed', 'failed', 'skipped', 'cancelled');
CREATE INDEX invocation_events_xid ON invocation_events (xid, id)
    WHERE (type = 'created' AND to_status = 'pending')
       OR type IN ('approved', 'denied', 'expired', 'completed', 'failed', 'skipped', 'cancelled');

ALTER TABLE invocation_events DROP COLUMN notice;
