ALTER TABLE action_invocations DROP COLUMN nothing_done;
