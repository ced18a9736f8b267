-- Events are announced only to organizations someone listens to: a
-- request waiting for an invocation's end (a synchronous invoke) or an
-- open event stream. Each outboxd process lists the organizations it has
-- such listeners for in event_listeners and renews its rows while they
-- last; a process that stops renewing (it crashed) drops out when its rows
-- expire. Announcing costs every notifying commit Postgres's notification
-- queue lock until its commit is flushed, and makes every backend that
-- LISTENs in the database (each process's listener, River's notifier) run
-- a transaction to read the queue: with nobody listening, a single
-- envelope cost Postgres a third more CPU with announcements than without
-- (outboxd bench).
--
-- The table names organizations and processes, nothing of an
-- organization's own, so it has no tenant policy: the announcing trigger
-- reads it under whatever role wrote the event.
CREATE TABLE event_listeners (
    organization_id text        NOT NULL,
    listener_id     uuid        NOT NULL,
    expires_at      timestamptz NOT NULL,
    PRIMARY KEY (organization_id, listener_id)
);

-- A listener that registers must hear every event committed after its
-- next read of the state it waits on. A transaction that checked for
-- listeners before the registration committed, and commits after it, would
-- announce nothing, yet its change could be missing from that read. So the
-- check holds a shared advisory lock on the organization until its
-- transaction ends, and a registration takes it exclusively: it waits for
-- the transactions that checked without it to end, and the ones that check
-- later see it (each statement of a volatile plpgsql function reads with a
-- new snapshot). The key is the one the ListenerRegister query takes.
CREATE OR REPLACE FUNCTION outboxd_announce_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(hashtextextended('outboxd.listeners:' || NEW.organization_id, 0));
    IF EXISTS (SELECT FROM event_listeners l
               WHERE l.organization_id = NEW.organization_id AND l.expires_at > now()) THEN
        PERFORM pg_notify('outboxd_invocation_events', json_build_object(
            'id', NEW.id, 'invocation_id', NEW.invocation_id, 'organization_id', NEW.organization_id,
            'type', NEW.type, 'to_status', NEW.to_status)::text);
    END IF;
    RETURN NULL;
END;
$$;
