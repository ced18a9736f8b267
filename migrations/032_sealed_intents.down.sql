DROP TRIGGER invocation_events_announce ON invocation_events;
DROP INDEX invocation_events_org_xid;
DROP INDEX invocation_events_xid;
ALTER TABLE invocation_events DROP COLUMN notice;
ALTER TABLE invocation_events ADD COLUMN notice text GENERATED ALWAYS AS (
    CASE
        WHEN type = 'created' AND to_status = 'pending' THEN 'action_approval_request'
        WHEN type IN ('approved', 'denied', 'expired') THEN 'action_approval_result'
        WHEN type IN ('completed', 'failed', 'skipped', 'cancelled') THEN 'action_completed'
    END) STORED;
CREATE INDEX invocation_events_org_xid ON invocation_events (organization_id, xid, id) WHERE notice IS NOT NULL;
CREATE INDEX invocation_events_xid ON invocation_events (xid, id) WHERE notice IS NOT NULL;
CREATE TRIGGER invocation_events_announce AFTER INSERT ON invocation_events
    FOR EACH ROW
    WHEN (NEW.notice IS NOT NULL)
    EXECUTE FUNCTION outboxd_announce_event();

ALTER TABLE action_invocations
    DROP COLUMN intent_digest,
    DROP COLUMN intent,
    DROP COLUMN approved_digest,
    DROP COLUMN intent_changes,
    DROP COLUMN params_original,
    DROP COLUMN edits;
