-- The timeline of every invocation: one row per state transition, written
-- by the statement that makes the transition (see internal/domain/invocation).
-- id grows with every event and is what event streams resume from.
CREATE TABLE invocation_events (
    id              bigserial   PRIMARY KEY,
    invocation_id   uuid        NOT NULL REFERENCES action_invocations (id) ON DELETE CASCADE,
    organization_id text        NOT NULL,
    seq             integer     NOT NULL,
    type            text        NOT NULL,
    from_status     text,
    to_status       text        NOT NULL,
    actor           text,
    reason          text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (invocation_id, seq)
);
CREATE INDEX invocation_events_org_id ON invocation_events (organization_id, id);

-- event_seq numbers an invocation's events; every transition increments it.
ALTER TABLE action_invocations ADD COLUMN event_seq integer NOT NULL DEFAULT 0;
-- retry is the invocation's retry policy (its source's, overridden by its
-- envelope's), so every job built for it, a replay's too, carries it.
ALTER TABLE action_invocations ADD COLUMN retry jsonb;

-- The events a listener waits for are announced once, on one channel, in
-- the transaction that wrote them: listeners never hear of a change that
-- rolled back. Only those: a request that needs approval, a decision, an
-- end. Every notifying commit takes Postgres's notification queue lock
-- until it is flushed, so announcing every transition (started, retries,
-- snoozes) would serialize the workers' commits; readers that need the
-- whole timeline read the table.
CREATE FUNCTION outboxd_announce_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('outboxd_invocation_events', json_build_object(
        'id', NEW.id, 'invocation_id', NEW.invocation_id, 'organization_id', NEW.organization_id,
        'type', NEW.type, 'to_status', NEW.to_status)::text);
    RETURN NULL;
END;
$$;
CREATE TRIGGER invocation_events_announce AFTER INSERT ON invocation_events
    FOR EACH ROW
    WHEN ((NEW.type = 'created' AND NEW.to_status = 'pending')
          OR NEW.type IN ('approved', 'denied', 'expired', 'cancelled', 'completed', 'failed', 'skipped'))
    EXECUTE FUNCTION outboxd_announce_event();
