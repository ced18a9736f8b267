CREATE OR REPLACE FUNCTION outboxd_announce_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('outboxd_invocation_events', json_build_object(
        'id', NEW.id, 'invocation_id', NEW.invocation_id, 'organization_id', NEW.organization_id,
        'type', NEW.type, 'to_status', NEW.to_status)::text);
    RETURN NULL;
END;
$$;
DROP TABLE event_listeners;
