-- name: InvocationInsert :one
-- A conflict on the idempotency key or external id inserts nothing and
-- returns no row; the caller then loads the existing invocation.
INSERT INTO action_invocations (
    id, job_id, organization_id, session_id, automation_id, user_id, requested_by, origin,
    integration, action, risk_level, mode, mode_source, params, params_sealed, params_hash,
    status, denied_reason, expires_at, external_id, idempotency_key,
    rate_bucket, must_run_before, approval, risk_hint, completed_at
) VALUES (
    @id, sqlc.narg(job_id), @organization_id, @session_id, @automation_id, sqlc.narg(user_id), @requested_by, @origin,
    @integration, @action, @risk_level, @mode, @mode_source, @params, sqlc.narg(params_sealed), @params_hash,
    @status, @denied_reason, @expires_at, @external_id, @idempotency_key,
    @rate_bucket, @must_run_before, @approval, @risk_hint,
    CASE WHEN @status::text = 'denied' THEN now() END
)
ON CONFLICT DO NOTHING
RETURNING *;

-- name: InvocationGet :one
SELECT * FROM action_invocations WHERE id = @id AND organization_id = @organization_id;

-- name: InvocationGetByID :one
SELECT * FROM action_invocations WHERE id = @id;

-- name: InvocationGetForUpdate :one
SELECT * FROM action_invocations WHERE id = @id AND organization_id = @organization_id FOR UPDATE;

-- name: InvocationGetByIDForUpdate :one
SELECT * FROM action_invocations WHERE id = @id FOR UPDATE;

-- name: InvocationGetByIdempotencyKey :one
SELECT * FROM action_invocations WHERE organization_id = @organization_id AND idempotency_key = @idempotency_key;

-- name: InvocationGetByExternalID :one
SELECT * FROM action_invocations WHERE organization_id = @organization_id AND external_id = @external_id;

-- name: InvocationCountPending :one
SELECT count(*) FROM action_invocations
WHERE organization_id = @organization_id AND session_id = @session_id AND status = 'pending';

-- name: InvocationListBySession :many
SELECT * FROM action_invocations
WHERE organization_id = @organization_id AND session_id = @session_id
ORDER BY created_at DESC, id
LIMIT @max OFFSET @skip;

-- name: InvocationListByOrg :many
SELECT * FROM action_invocations
WHERE organization_id = @organization_id AND (sqlc.narg(status)::text IS NULL OR status = sqlc.narg(status))
ORDER BY created_at DESC, id
LIMIT @max OFFSET @skip;

-- name: InvocationCountByOrg :one
SELECT count(*) FROM action_invocations
WHERE organization_id = @organization_id AND (sqlc.narg(status)::text IS NULL OR status = sqlc.narg(status));

-- name: InvocationApprove :one
UPDATE action_invocations
SET status = 'approved', approved_by = @approved_by, approved_at = now(), updated_at = now()
WHERE id = @id AND status = 'pending'
RETURNING *;

-- name: InvocationDeny :one
UPDATE action_invocations
SET status = 'denied', denied_reason = @denied_reason, error = sqlc.narg(error), approved_by = @approved_by,
    approved_at = now(), completed_at = now(), updated_at = now(), params_sealed = NULL
WHERE id = @id AND status = 'pending'
RETURNING *;

-- name: InvocationExpire :one
UPDATE action_invocations
SET status = 'expired', denied_reason = 'expired', completed_at = now(), updated_at = now(), params_sealed = NULL
WHERE id = @id AND status = 'pending'
RETURNING *;

-- name: InvocationListExpiredForUpdate :many
SELECT * FROM action_invocations
WHERE status = 'pending' AND expires_at <= now()
ORDER BY expires_at
LIMIT @max
FOR UPDATE SKIP LOCKED;

-- name: InvocationCancel :one
UPDATE action_invocations
SET status = 'cancelled', completed_at = now(), updated_at = now(), params_sealed = NULL
WHERE id = @id AND status IN ('pending', 'approved')
RETURNING *;

-- name: InvocationMarkExecuting :one
UPDATE action_invocations
SET status = 'executing', attempt = @attempt, started_at = coalesce(started_at, now()), updated_at = now()
WHERE id = @id AND status IN ('approved', 'executing')
RETURNING *;

-- name: InvocationComplete :one
UPDATE action_invocations
SET status = 'completed', result = @result, provider_ref = sqlc.narg(provider_ref), conflict = @conflict,
    error = NULL, duration_ms = @duration_ms, completed_at = now(), updated_at = now(), params_sealed = NULL
WHERE id = @id AND status = 'executing'
RETURNING *;

-- name: InvocationFail :one
-- A failure in the worker is a dead letter an operator may replay.
UPDATE action_invocations
SET status = 'failed', error = @error, duration_ms = sqlc.narg(duration_ms), completed_at = now(), updated_at = now(),
    dead_lettered_at = now()
WHERE id = @id AND status IN ('approved', 'executing')
RETURNING *;

-- name: InvocationSkip :one
UPDATE action_invocations
SET status = 'skipped', error = @error, completed_at = now(), updated_at = now(), params_sealed = NULL
WHERE id = @id AND status IN ('approved', 'executing')
RETURNING *;

-- name: InvocationRecordProviderWait :exec
UPDATE action_invocations
SET status = 'approved', error = @error, duration_ms = sqlc.narg(duration_ms), provider_waits = provider_waits + 1, updated_at = now()
WHERE id = @id AND status = 'executing';

-- name: InvocationRecordRetry :exec
UPDATE action_invocations
SET status = 'approved', error = @error, duration_ms = sqlc.narg(duration_ms), updated_at = now()
WHERE id = @id AND status = 'executing';

-- name: DeadLetterList :many
SELECT * FROM action_invocations
WHERE organization_id = @organization_id AND dead_lettered_at IS NOT NULL AND discarded_at IS NULL
ORDER BY dead_lettered_at DESC, id
LIMIT @max OFFSET @skip;

-- name: DeadLetterCount :one
SELECT count(*) FROM action_invocations
WHERE organization_id = @organization_id AND dead_lettered_at IS NOT NULL AND discarded_at IS NULL;

-- name: DeadLetterReplay :one
UPDATE action_invocations
SET status = 'approved', dead_lettered_at = NULL, completed_at = NULL, replay_count = replay_count + 1,
    replayed_by = @replayed_by, replayed_at = now(), job_id = @job_id, updated_at = now()
WHERE id = @id AND status = 'failed' AND dead_lettered_at IS NOT NULL AND discarded_at IS NULL
RETURNING *;

-- name: DeadLetterDiscard :one
UPDATE action_invocations
SET discarded_by = @discarded_by, discarded_at = now(), updated_at = now(), params_sealed = NULL
WHERE id = @id AND status = 'failed' AND dead_lettered_at IS NOT NULL AND discarded_at IS NULL
RETURNING *;
