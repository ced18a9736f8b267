DROP TABLE invocation_events;
DROP FUNCTION outboxd_announce_event();
ALTER TABLE action_invocations DROP COLUMN event_seq, DROP COLUMN retry;
