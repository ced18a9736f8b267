-- name: RevocationInsert :one
INSERT INTO token_revocations (organization_id, jti, session_id, automation_id, subject, issued_before, revoked_by, expires_at)
VALUES (@organization_id, sqlc.narg(jti), sqlc.narg(session_id), sqlc.narg(automation_id), sqlc.narg(subject), @issued_before, @revoked_by, sqlc.narg(expires_at))
RETURNING *;

-- name: RevocationDeleteExpired :execrows
DELETE FROM token_revocations WHERE expires_at <= now();

-- name: RevocationList :many
-- An organization's revocations in effect, newest first.
SELECT * FROM token_revocations
WHERE organization_id = @organization_id AND (expires_at IS NULL OR expires_at > now())
ORDER BY id DESC
LIMIT @max_rows;

-- name: RevocationVersion :one
SELECT version FROM token_revocation_version;

-- name: RevocationAll :many
-- Every organization's revocations in effect.
SELECT * FROM token_revocations WHERE expires_at IS NULL OR expires_at > now();

-- name: RevocationRequested :many
-- The invocations of an organization that tokens a revocation refuses
-- asked for and that have not started (pending, or approved and never
-- started), locked in id order. They record the token's session_id,
-- automation_id, user_id and subject (requested_by), not its iat or jti:
-- an invocation created before the cut-off was asked for by a token issued
-- before it, so only those are matched. With no selector, every one of the
-- organization's created before the cut-off.
SELECT a.id FROM action_invocations AS a
WHERE a.organization_id = @organization_id
  AND (a.status = 'pending' OR (a.status = 'approved' AND a.started_at IS NULL))
  AND a.created_at < @issued_before
  AND CASE
      WHEN sqlc.narg(session_id)::text IS NOT NULL THEN a.session_id = sqlc.narg(session_id)::text
      WHEN sqlc.narg(automation_id)::text IS NOT NULL THEN a.automation_id = sqlc.narg(automation_id)::text
      WHEN sqlc.narg(subject)::text IS NOT NULL THEN a.requested_by = sqlc.narg(subject)::text OR a.user_id = sqlc.narg(subject)::text
      ELSE true
  END
ORDER BY a.id
FOR UPDATE;
