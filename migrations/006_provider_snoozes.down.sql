ALTER TABLE action_invocations DROP COLUMN provider_waits;
