DROP INDEX action_invocations_dead_letters;
CREATE INDEX action_invocations_dead_letters ON action_invocations (organization_id, dead_lettered_at DESC)
    WHERE dead_lettered_at IS NOT NULL AND discarded_at IS NULL;

DROP INDEX action_invocations_org_created;
CREATE INDEX action_invocations_org_created ON action_invocations (organization_id, created_at DESC);
