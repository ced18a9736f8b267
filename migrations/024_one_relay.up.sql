-- A notice is what an event tells the people and agents watching: a
-- request for approval, a decision, an end (the three notifications of the
-- Actions specification). Until now that was written out wherever it was
-- needed: the announcing trigger (migration 008), the feed indexes
-- (migration 020) and each feed query. It is now one column, computed by
-- Postgres as the row is written, that all of them read: the notice kind,
-- or NULL for an event that makes none (started, retries, snoozes,
-- replays, discards, and a creation that does not wait for approval).
-- Computing it costs an insert one CASE; the column is NULL, so free, on
-- the events that make no notice.
ALTER TABLE invocation_events ADD COLUMN notice text GENERATED ALWAYS AS (
    CASE
        WHEN type = 'created' AND to_status = 'pending' THEN 'action_approval_request'
        WHEN type IN ('approved', 'denied', 'expired') THEN 'action_approval_result'
        WHEN type IN ('completed', 'failed', 'skipped', 'cancelled') THEN 'action_completed'
    END) STORED;

DROP INDEX invocation_events_org_xid;
DROP INDEX invocation_events_xid;
CREATE INDEX invocation_events_org_xid ON invocation_events (organization_id, xid, id) WHERE notice IS NOT NULL;
CREATE INDEX invocation_events_xid ON invocation_events (xid, id) WHERE notice IS NOT NULL;

DROP TRIGGER invocation_events_announce ON invocation_events;
CREATE TRIGGER invocation_events_announce AFTER INSERT ON invocation_events
    FOR EACH ROW
    WHEN (NEW.notice IS NOT NULL)
    EXECUTE FUNCTION outboxd_announce_event();

-- One relay (internal/domain/relay) feeds every consumer of notices
-- (webhooks, Slack approvals); each has its position in invocation_events
-- here, keyed by its name, in place of a table of its own. The relay turns
-- the notices after a consumer's position into its jobs and moves the
-- position in the same transaction. A consumer without a row starts at
-- the horizon of its first run: it gets no notice written before.
CREATE TABLE relay_cursors (
    consumer  text   PRIMARY KEY,
    after_xid xid8   NOT NULL,
    after_id  bigint NOT NULL
);
INSERT INTO relay_cursors (consumer, after_xid, after_id) SELECT 'webhook', after_xid, after_id FROM webhook_relay;
INSERT INTO relay_cursors (consumer, after_xid, after_id) SELECT 'slack', after_xid, after_id FROM slack_relay;
DROP TABLE webhook_relay;
DROP TABLE slack_relay;

-- The relay is the workers' (it works through the owner's pool for every
-- organization): the API role gets no access at all, as to flow_buckets
-- (migration 021).
DO $$
BEGIN
    EXECUTE format('REVOKE ALL ON %I.relay_cursors FROM outboxd_tenant', current_schema());
END
$$;

-- The two relay job kinds this replaces have no worker any more: drop
-- their waiting jobs (the periodic relay jobs of kind 'relay' take over).
DELETE FROM river_job
WHERE kind IN ('webhook_relay', 'slack_relay')
  AND state IN ('available', 'scheduled', 'retryable', 'pending');
