-- The operations page counts what ended in the last hour per organization
-- (GET /v1/stats): a partial index keeps that a range read. It costs one
-- index entry per finished invocation.
CREATE INDEX action_invocations_org_completed ON action_invocations (organization_id, completed_at)
    WHERE completed_at IS NOT NULL;
