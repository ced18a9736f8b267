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
-- started), locked in id order. An invocation records its token's
-- session_id, automation_id, user_id and subject (requested_by), jti
-- (token_jti) and iat (token_issued_at): one whose token was issued before
-- the cut-off is matched, by its creation time when the token had no iat
-- or the row predates them (created before the cut-off, so asked for by a
-- token issued before it). With no selector, every one of the
-- organization's asked for before the cut-off.
SELECT a.id FROM action_invocations AS a
WHERE a.organization_id = @organization_id
  AND (a.status = 'pending' OR (a.status = 'approved' AND a.started_at IS NULL))
  AND coalesce(a.token_issued_at, a.created_at) < @issued_before::timestamptz
  AND CASE
      WHEN sqlc.narg(jti)::text IS NOT NULL THEN a.token_jti = sqlc.narg(jti)::text
      WHEN sqlc.narg(session_id)::text IS NOT NULL THEN a.session_id = sqlc.narg(session_id)::text
      WHEN sqlc.narg(automation_id)::text IS NOT NULL THEN a.automation_id = sqlc.narg(automation_id)::text
      WHEN sqlc.narg(subject)::text IS NOT NULL THEN a.requested_by = sqlc.narg(subject)::text OR a.user_id = sqlc.narg(subject)::text
      ELSE true
  END
ORDER BY a.id
FOR UPDATE;

-- name: RevocationLock :exec
-- Orders a revocation of an organization with the transactions recording
-- its invocations (RevocationLockShared): the revocation's transaction
-- takes it first, so it waits for those under way, and those that begin
-- wait for it to commit.
SELECT pg_advisory_xact_lock(hashtextextended('token_revocations/' || @organization_id::text, 0));

-- name: RevocationLockShared :exec
-- Taken by a transaction recording invocations of an organization before
-- it looks for their tokens' revocations (RevocationRefusing), in a
-- statement of its own, so that that look's snapshot follows every
-- revocation of the organization that committed before it.
SELECT pg_advisory_xact_lock_shared(hashtextextended('token_revocations/' || @organization_id::text, 0));

-- name: RevocationRefusing :many
-- For each token of the JSON array @tokens (its position "token", its
-- claims "jti", "issued_at", "session_id", "automation_id", "subject" and
-- "user_id", absent or null when it has none), the organization's oldest
-- revocation in effect that refuses it, as the API processes' memory does
-- (revocation's index): one of its selectors names the token's jti,
-- session_id, automation_id, subject, or its user_id as a subject, or it
-- has none; and the token was issued before its cut-off, or has no iat.
-- A token no revocation refuses is not in the answer. Each selector is an
-- index lookup of its own (migration 048), not a walk through the
-- organization's revocations.
SELECT t.token::int AS token, r.id, r.jti, r.session_id, r.automation_id, r.subject, r.issued_before, r.revoked_by
FROM jsonb_to_recordset(@tokens::jsonb)
    AS t(token int, jti text, issued_at timestamptz, session_id text, automation_id text, subject text, user_id text)
CROSS JOIN LATERAL (
    SELECT s.id, s.jti, s.session_id, s.automation_id, s.subject, s.issued_before, s.revoked_by FROM (
        SELECT * FROM token_revocations AS x WHERE x.organization_id = @organization_id AND x.jti = t.jti
        UNION ALL
        SELECT * FROM token_revocations AS x WHERE x.organization_id = @organization_id AND x.session_id = t.session_id
        UNION ALL
        SELECT * FROM token_revocations AS x WHERE x.organization_id = @organization_id AND x.automation_id = t.automation_id
        UNION ALL
        SELECT * FROM token_revocations AS x WHERE x.organization_id = @organization_id AND x.subject = t.subject
        UNION ALL
        SELECT * FROM token_revocations AS x WHERE x.organization_id = @organization_id AND x.subject = t.user_id
        UNION ALL
        SELECT * FROM token_revocations AS x WHERE x.organization_id = @organization_id
            AND x.jti IS NULL AND x.session_id IS NULL AND x.automation_id IS NULL AND x.subject IS NULL
    ) AS s
    WHERE (s.expires_at IS NULL OR s.expires_at > now())
      AND (t.issued_at IS NULL OR t.issued_at < s.issued_before)
    ORDER BY s.id
    LIMIT 1
) AS r
ORDER BY t.token;
