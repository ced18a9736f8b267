DROP INDEX action_invocations_dead_letters;
CREATE INDEX action_invocations_dead_letters ON action_invocations (organization_id, dead_lettered_at DESC)
    WHERE dead_lettered_at IS NOT NULL AND discarded_at IS NULL;

DROP INDEX action_invocations_org_created;
CREATE INDEX action_invocations_org_created ON action_invocations (organization_id, created_at DESC);

-- As in the up part: the key indexes made after action_invocations_org_created.
DROP INDEX action_invocations_session_idempotency_key;
CREATE UNIQUE INDEX action_invocations_session_idempotency_key
    ON action_invocations (organization_id, session_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
DROP INDEX action_invocations_org_external_id;
CREATE UNIQUE INDEX action_invocations_org_external_id ON action_invocations (organization_id, external_id)
    WHERE external_id IS NOT NULL;
