ALTER TABLE action_invocations DROP COLUMN params_sealed;
