-- MCP invocations become session invocations again, as they are.
UPDATE action_invocations SET origin = 'invoke' WHERE origin = 'mcp';
ALTER TABLE action_invocations DROP CONSTRAINT action_invocations_origin_check;
ALTER TABLE action_invocations ADD CONSTRAINT action_invocations_origin_check
    CHECK (origin IN ('invoke', 'envelope'));
