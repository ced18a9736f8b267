-- name: SubmitLookup :one
-- The one read of a request before its write: the invocation an earlier
-- request with the same idempotency key (or, without a key, external id)
-- created, if any, and the mode overrides for the action: the org
-- default and, when an automation is given, its override; empty strings
-- when unset. existing_id is '' when there is none.
SELECT
    coalesce((SELECT i.id FROM action_invocations i
              WHERE i.organization_id = @organization_id AND i.idempotency_key = nullif(@idempotency_key::text, ''))::text,
             (SELECT i.id FROM action_invocations i
              WHERE i.organization_id = @organization_id AND @idempotency_key::text = ''
                AND i.external_id = nullif(@external_id::text, ''))::text, '')::text AS existing_id,
    coalesce((SELECT m.mode FROM action_modes m
              WHERE m.organization_id = @organization_id AND m.scope = 'automation'
                AND m.scope_id = @automation_id::text AND m.source_id = @source_id AND m.action_id = @action_id), '')::text AS automation_mode,
    coalesce((SELECT m.mode FROM action_modes m
              WHERE m.organization_id = @organization_id AND m.scope = 'org'
                AND m.scope_id = @organization_id AND m.source_id = @source_id AND m.action_id = @action_id), '')::text AS org_mode;
