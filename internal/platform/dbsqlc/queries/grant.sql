-- name: GrantInsert :one
INSERT INTO grants (
    id, organization_id, scope, scope_id, source_id, action_id, fixed, granted, remaining,
    expires_at, definition_hash, created_by, created_from, user_id
) VALUES (
    @id, @organization_id, @scope, @scope_id, @source_id, @action_id, @fixed, @granted, @granted,
    @expires_at, @definition_hash, @created_by, @created_from, NULLIF(@user_id::text, '')
)
RETURNING *;

-- name: GrantCandidates :many
-- The live grants that would let a request through: of its action, in its
-- session or automation, made for its user (or for none, as it is), whose
-- fixed values its (stored) params hold exactly. Soonest to expire first.
SELECT id, definition_hash FROM grants
WHERE organization_id = @organization_id AND source_id = @source_id AND action_id = @action_id
  AND revoked_at IS NULL AND remaining > 0 AND expires_at > now()
  AND ((scope = 'session' AND scope_id = @session_id::text) OR (scope = 'automation' AND scope_id = @automation_id::text))
  AND user_id IS NOT DISTINCT FROM NULLIF(@user_id::text, '')
  AND NOT EXISTS (
      SELECT 1 FROM jsonb_each(fixed) AS f
      WHERE (@params::jsonb -> f.key) IS DISTINCT FROM f.value
  )
ORDER BY expires_at, id
LIMIT 8;

-- name: GrantUse :one
-- Takes one use of a live grant; no row when another transaction took the
-- last one, or it expired or was revoked meanwhile (the row lock makes
-- concurrent uses wait for each other and see the count they left).
UPDATE grants SET remaining = remaining - 1
WHERE id = @id AND organization_id = @organization_id
  AND remaining > 0 AND expires_at > now() AND revoked_at IS NULL
RETURNING id, remaining;

-- name: GrantRevokeAction :many
-- Revokes the live grants of an action whose definition hash is not
-- @keep_hash (every one when @keep_hash is '').
UPDATE grants SET revoked_at = now(), revoked_by = @revoked_by, revoke_reason = @reason
WHERE organization_id = @organization_id AND source_id = @source_id AND action_id = @action_id
  AND revoked_at IS NULL AND (@keep_hash::text = '' OR definition_hash <> @keep_hash::text)
RETURNING id;

-- name: GrantRevokeSource :many
-- Revokes the unrevoked grants of every action of a source.
UPDATE grants SET revoked_at = now(), revoked_by = @revoked_by, revoke_reason = @reason
WHERE organization_id = @organization_id AND source_id = @source_id AND revoked_at IS NULL
RETURNING id;

-- name: GrantRevokeCreatedBy :many
-- Revokes the live grants one person created (their tokens revoked by
-- subject).
UPDATE grants SET revoked_at = now(), revoked_by = @revoked_by, revoke_reason = @reason
WHERE organization_id = @organization_id AND created_by = @created_by
  AND revoked_at IS NULL AND remaining > 0 AND expires_at > now()
RETURNING id, source_id;

-- name: GrantRevoke :one
-- Revokes one grant; no row when it is unknown or already revoked.
UPDATE grants SET revoked_at = now(), revoked_by = @revoked_by, revoke_reason = @reason
WHERE id = @id AND organization_id = @organization_id AND revoked_at IS NULL
RETURNING *;

-- name: GrantGet :one
SELECT * FROM grants WHERE id = @id AND organization_id = @organization_id;

-- name: GrantByInvocation :one
SELECT * FROM grants WHERE organization_id = @organization_id AND created_from = @created_from;

-- name: GrantList :many
-- An organization's grants, newest first; only the live ones with @active;
-- with @sources (a token's sources claim; NULL: any source), only those of
-- the sources it lists.
SELECT * FROM grants
WHERE organization_id = @organization_id
  AND (NOT @active::boolean OR (revoked_at IS NULL AND remaining > 0 AND expires_at > now()))
  AND (sqlc.narg(sources)::text[] IS NULL OR source_id = ANY(sqlc.narg(sources)::text[]))
ORDER BY created_at DESC, id
LIMIT @max_rows;

-- name: GrantGiveBack :exec
-- Gives back a use taken for an invocation that was not recorded after all
-- (a concurrent request took its idempotency key).
UPDATE grants SET remaining = remaining + 1
WHERE id = @id AND organization_id = @organization_id AND remaining < granted;
