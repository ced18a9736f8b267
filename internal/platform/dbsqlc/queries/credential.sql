-- name: CredentialUpsert :one
INSERT INTO credentials (organization_id, integration, user_id, sealed, token_kind, created_by)
VALUES (@organization_id, @integration, @user_id, @sealed, @token_kind, @created_by)
ON CONFLICT (organization_id, integration, user_id)
DO UPDATE SET sealed = EXCLUDED.sealed, token_kind = EXCLUDED.token_kind, created_by = EXCLUDED.created_by, updated_at = now(), note = ''
RETURNING *;

-- name: CredentialGet :one
SELECT * FROM credentials
WHERE organization_id = @organization_id AND integration = @integration AND user_id = @user_id;

-- name: CredentialList :many
SELECT organization_id, integration, user_id, token_kind, created_by, created_at, updated_at, note FROM credentials
WHERE organization_id = @organization_id
ORDER BY integration, user_id;

-- name: CredentialIntegrations :many
-- The integrations a caller can use: the org's credentials and, when a user
-- is given, that user's.
SELECT DISTINCT integration FROM credentials
WHERE organization_id = @organization_id AND (user_id = '' OR user_id = @user_id::text)
ORDER BY integration;

-- name: InvokeRateHit :many
-- Counts one invoke for each element of @session_ids (a session listed
-- twice made two) in the window that starts at @window_start, and answers
-- each session's count in it. The rows are taken in the order of the
-- session ids, so that two of these never deadlock.
INSERT INTO invoke_rate_windows (organization_id, session_id, window_start, count)
SELECT @organization_id, s.session_id, @window_start, count(*)
FROM unnest(@session_ids::text[]) AS s (session_id)
GROUP BY s.session_id
ORDER BY s.session_id
ON CONFLICT (organization_id, session_id, window_start)
DO UPDATE SET count = invoke_rate_windows.count + excluded.count
RETURNING session_id, count;

-- name: InvokeRateDeleteBefore :exec
DELETE FROM invoke_rate_windows WHERE window_start < @before;

-- name: CredentialNewest :one
-- The most recently stored credential of any organization: the one sealed
-- with the current secrets.key if any is.
SELECT * FROM credentials ORDER BY updated_at DESC LIMIT 1;

-- name: CredentialNote :execrows
-- Notes the credential a call used: the user's when one is stored, else the
-- organization's, as the worker resolves it. Only a credential stored no
-- later than @version (read with the invocation) is noted, so a credential
-- replaced since the call is not, and only when the note changes: the
-- answer says whether it did.
UPDATE credentials AS t SET note = @note
WHERE t.organization_id = @organization_id AND t.integration = @integration
  AND t.user_id = (SELECT c.user_id FROM credentials c
                 WHERE c.organization_id = @organization_id AND c.integration = @integration
                   AND (c.user_id = @user_id::text OR c.user_id = '')
                 ORDER BY c.user_id = '' LIMIT 1)
  AND t.updated_at <= @version AND t.note <> @note;

-- name: CredentialDeleteOne :execrows
-- One stored provider credential: the organization's (user_id '') or one
-- user's.
DELETE FROM credentials WHERE organization_id = @organization_id AND integration = @integration AND user_id = @user_id;
