-- An invocation asked for over the MCP front door (/mcp) says so: origin
-- 'mcp', beside 'invoke' (a session over REST) and 'envelope' (an
-- automation).
ALTER TABLE action_invocations DROP CONSTRAINT action_invocations_origin_check;
ALTER TABLE action_invocations ADD CONSTRAINT action_invocations_origin_check
    CHECK (origin IN ('invoke', 'envelope', 'mcp'));
