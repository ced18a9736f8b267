-- name: CredentialUpsert :one
INSERT INTO credentials (organization_id, integration, user_id, sealed, created_by)
VALUES (@organization_id, @integration, @user_id, @sealed, @created_by)
ON CONFLICT (organization_id, integration, user_id)
DO UPDATE SET sealed = EXCLUDED.sealed, created_by = EXCLUDED.created_by, updated_at = now()
RETURNING *;

-- name: CredentialGet :one
SELECT * FROM credentials
WHERE organization_id = @organization_id AND integration = @integration AND user_id = @user_id;

-- name: CredentialList :many
SELECT organization_id, integration, user_id, created_by, created_at, updated_at FROM credentials
WHERE organization_id = @organization_id
ORDER BY integration, user_id;

-- name: InvokeRateHit :one
INSERT INTO invoke_rate_windows (organization_id, session_id, window_start, count)
VALUES (@organization_id, @session_id, @window_start, 1)
ON CONFLICT (organization_id, session_id, window_start)
DO UPDATE SET count = invoke_rate_windows.count + 1
RETURNING count;

-- name: InvokeRateDeleteBefore :exec
DELETE FROM invoke_rate_windows WHERE window_start < @before;
