ALTER TABLE action_invocations DROP COLUMN trace_context;
