-- name: ModeList :many
SELECT * FROM action_modes
WHERE organization_id = @organization_id AND scope = @scope AND scope_id = @scope_id
ORDER BY source_id, action_id;

-- name: ModeDeleteScope :exec
-- Deletes the modes of one scope; with @sources (a token's sources claim;
-- NULL: any source), only those of the sources it lists.
DELETE FROM action_modes
WHERE organization_id = @organization_id AND scope = @scope AND scope_id = @scope_id
  AND (sqlc.narg(sources)::text[] IS NULL OR source_id = ANY(sqlc.narg(sources)::text[]));

-- name: ModeUpsert :exec
INSERT INTO action_modes (organization_id, scope, scope_id, source_id, action_id, mode, updated_by)
VALUES (@organization_id, @scope, @scope_id, @source_id, @action_id, @mode, @updated_by)
ON CONFLICT (organization_id, scope, scope_id, source_id, action_id)
DO UPDATE SET mode = EXCLUDED.mode, updated_by = EXCLUDED.updated_by, updated_at = now();

-- name: SettingsLock :exec
-- Serialises the replacements of one of an organization's settings until
-- the transaction ends (key names the organization and the setting).
SELECT pg_advisory_xact_lock(hashtextextended(@key::text, 0));
