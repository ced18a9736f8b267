-- Fails when two sessions of an organization have used the same key since
-- the up migration: which invocation keeps it is not the migration's to
-- decide.
DROP INDEX action_invocations_session_idempotency_key;
CREATE UNIQUE INDEX action_invocations_org_idempotency_key ON action_invocations (organization_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
