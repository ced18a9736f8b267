ALTER TABLE action_invocations DROP COLUMN steps;
