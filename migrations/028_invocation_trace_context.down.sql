ALTER TABLE action_invocations DROP COLUMN trace_context, DROP COLUMN approval_trace;
