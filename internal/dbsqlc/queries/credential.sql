-- name: CredentialUpsert :one
INSERT INTO credentials (organization_id, integration, user_id, sealed, token_kind, created_by)
VALUES (@organization_id, @integration, @user_id, @sealed, @token_kind, @created_by)
ON CONFLICT (organization_id, integration, user_id)
DO UPDATE SET sealed = EXCLUDED.sealed, token_kind = EXCLUDED.token_kind, created_by = EXCLUDED.created_by, updated_at = now()
RETURNING *;

-- name: CredentialGet :one
SELECT * FROM credentials
WHERE organization_id = @organization_id AND integration = @integration AND user_id = @user_id;

-- name: CredentialList :many
SELECT organization_id, integration, user_id, token_kind, created_by, created_at, updated_at FROM credentials
WHERE organization_id = @organization_id
ORDER BY integration, user_id;

-- name: CredentialIntegrations :many
-- The integrations a caller can use: the org's credentials and, when a user
-- is given, that user's.
SELECT DISTINCT integration FROM credentials
WHERE organization_id = @organization_id AND (user_id = '' OR user_id = @user_id::text)
ORDER BY integration;

-- name: InvokeRateHit :one
INSERT INTO invoke_rate_windows (organization_id, session_id, window_start, count)
VALUES (@organization_id, @session_id, @window_start, 1)
ON CONFLICT (organization_id, session_id, window_start)
DO UPDATE SET count = invoke_rate_windows.count + 1
RETURNING count;

-- name: InvokeRateDeleteBefore :exec
DELETE FROM invoke_rate_windows WHERE window_start < @before;

-- name: CredentialNewest :one
-- The most recently stored credential of any organization: the one sealed
-- with the current secrets.key if any is.
SELECT * FROM credentials ORDER BY updated_at DESC LIMIT 1;
