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
