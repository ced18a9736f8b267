-- Sealed intents (docs/intents.md). An invocation that waits for a human
-- records an intent: the digest of what determines its effect (source,
-- action, the action's definition hash, a keyed hash of its exact params,
-- the credential's identity, the mode) and those components, so that a
-- worker can tell what changed. An approval records the digest it
-- approved; the worker recomputes it before the provider call, and on a
-- mismatch the invocation goes back to pending (event intent_changed)
-- with the changes it found. An approver may edit the params before
-- approving: the original params (redacted) and each edit (who, when, the
-- diff of the redacted params) are kept.
ALTER TABLE action_invocations
    ADD COLUMN intent_digest   text,
    ADD COLUMN intent          jsonb,
    ADD COLUMN approved_digest text,
    ADD COLUMN intent_changes  text[],
    ADD COLUMN params_original jsonb,
    ADD COLUMN edits           jsonb;

-- An intent_changed event returns an invocation to pending: a new request
-- for approval, a notice like a creation in pending (migration 024). The
-- generated column is recomputed (Postgres 15 cannot change its
-- expression in place), with the indexes and the trigger that read it.
DROP TRIGGER invocation_events_announce ON invocation_events;
DROP INDEX invocation_events_org_xid;
DROP INDEX invocation_events_xid;
ALTER TABLE invocation_events DROP COLUMN notice;
ALTER TABLE invocation_events ADD COLUMN notice text GENERATED ALWAYS AS (
    CASE
        WHEN type IN ('created', 'intent_changed') AND to_status = 'pending' THEN 'action_approval_request'
        WHEN type IN ('approved', 'denied', 'expired') THEN 'action_approval_result'
        WHEN type IN ('completed', 'failed', 'skipped', 'cancelled') THEN 'action_completed'
    END) STORED;
CREATE INDEX invocation_events_org_xid ON invocation_events (organization_id, xid, id) WHERE notice IS NOT NULL;
CREATE INDEX invocation_events_xid ON invocation_events (xid, id) WHERE notice IS NOT NULL;
CREATE TRIGGER invocation_events_announce AFTER INSERT ON invocation_events
    FOR EACH ROW
    WHEN (NEW.notice IS NOT NULL)
    EXECUTE FUNCTION outboxd_announce_event();
