-- name: InvocationInsertMany :many
-- Records new invocations, one per element of the JSON array @invocations (the
-- columns by name), with their created events, in one statement. One whose
-- idempotency key or external id is taken (by an earlier invocation or an
-- earlier element) is not inserted and not in the answer; the caller then
-- loads the existing invocation.
WITH next AS (
    INSERT INTO action_invocations (
        id, job_id, organization_id, session_id, automation_id, user_id, requested_by, origin,
        integration, action, risk_level, mode, mode_source, params, params_sealed, params_hash,
        status, denied_reason, expires_at, external_id, idempotency_key,
        rate_bucket, must_run_before, approval, risk_hint, retry, trace_context, grant_id, event_seq, completed_at,
        intent_digest, intent, token_jti, token_issued_at
    )
    SELECT r.id, r.job_id, r.organization_id, r.session_id, r.automation_id, r.user_id, r.requested_by, r.origin,
        r.integration, r.action, r.risk_level, r.mode, r.mode_source, r.params, r.params_sealed, r.params_hash,
        r.status, r.denied_reason, r.expires_at, r.external_id, r.idempotency_key,
        r.rate_bucket, r.must_run_before, r.approval, r.risk_hint, r.retry, r.trace_context, r.grant_id, 1,
        CASE WHEN r.status = 'denied' THEN now() END,
        r.intent_digest, r.intent, r.token_jti, r.token_issued_at
    FROM jsonb_populate_recordset(NULL::action_invocations, @invocations::jsonb) AS r
    ON CONFLICT DO NOTHING
    RETURNING *
), event AS (
    INSERT INTO invocation_events (invocation_id, organization_id, seq, type, to_status, actor, reason)
    SELECT next.id, next.organization_id, 1, 'created', next.status, next.requested_by, next.denied_reason FROM next
)
SELECT * FROM next;

-- name: InvocationGet :one
SELECT * FROM action_invocations WHERE id = @id AND organization_id = @organization_id;

-- name: InvocationGetByID :one
SELECT * FROM action_invocations WHERE id = @id;

-- name: InvocationListByIDs :many
-- The invocations of several waiting requests, read together (see
-- outbox's wait); under row-level security, the organization's only.
SELECT * FROM action_invocations WHERE id = ANY(@ids::uuid[]);

-- name: InvocationGetForUpdate :one
SELECT * FROM action_invocations WHERE id = @id AND organization_id = @organization_id FOR UPDATE;

-- name: InvocationGetByIdempotencyKey :one
-- An idempotency key is the session's own.
SELECT * FROM action_invocations
WHERE organization_id = @organization_id AND session_id = @session_id AND idempotency_key = @idempotency_key;

-- name: InvocationGetByExternalID :one
SELECT * FROM action_invocations WHERE organization_id = @organization_id AND external_id = @external_id;

-- name: InvocationCountPending :one
SELECT count(*) FROM action_invocations
WHERE organization_id = @organization_id AND session_id = @session_id AND status = 'pending';

-- name: InvocationListBySession :many
-- A session's invocations, newest first; with @sources (a token's sources
-- claim; NULL: any source), only those of the sources it lists.
SELECT * FROM action_invocations
WHERE organization_id = @organization_id AND session_id = @session_id
  AND (sqlc.narg(sources)::text[] IS NULL OR integration = ANY(sqlc.narg(sources)::text[]))
ORDER BY created_at DESC, id
LIMIT @max OFFSET @skip;

-- name: InvocationListByOrg :many
-- The organization's invocations, newest first, each filter applied when
-- given: status, source (integration), origin, session, automation, a
-- created_at range [created_after, created_before) and the reader's
-- sources claim (sources: the source ids it lists; NULL: any source).
-- The page is chosen first, from the entries of
-- action_invocations_org_created alone (it carries the filtered columns,
-- migration 043), and only its rows are read: an offset deep in the list
-- skips index entries, not whole rows.
SELECT a.* FROM action_invocations a
JOIN (
    SELECT p.id, p.created_at FROM action_invocations p
    WHERE p.organization_id = @organization_id
      AND (sqlc.narg(status)::text IS NULL OR p.status = sqlc.narg(status))
      AND (sqlc.narg(integration)::text IS NULL OR p.integration = sqlc.narg(integration))
      AND (sqlc.narg(sources)::text[] IS NULL OR p.integration = ANY(sqlc.narg(sources)::text[]))
      AND (sqlc.narg(origin)::text IS NULL OR p.origin = sqlc.narg(origin))
      AND (sqlc.narg(session_id)::text IS NULL OR p.session_id = sqlc.narg(session_id))
      AND (sqlc.narg(automation_id)::text IS NULL OR p.automation_id = sqlc.narg(automation_id))
      AND (sqlc.narg(created_after)::timestamptz IS NULL OR p.created_at >= sqlc.narg(created_after))
      AND (sqlc.narg(created_before)::timestamptz IS NULL OR p.created_at < sqlc.narg(created_before))
    ORDER BY p.created_at DESC, p.id
    LIMIT @max OFFSET @skip
) AS page ON a.id = page.id
ORDER BY page.created_at DESC, page.id;

-- name: InvocationCountByOrg :one
-- How many InvocationListByOrg lists in all: a read of the organization's
-- entries of action_invocations_org_created (its filtered columns are in
-- the index, migration 043), not of its rows.
SELECT count(*) FROM action_invocations
WHERE organization_id = @organization_id
  AND (sqlc.narg(status)::text IS NULL OR status = sqlc.narg(status))
  AND (sqlc.narg(integration)::text IS NULL OR integration = sqlc.narg(integration))
  AND (sqlc.narg(sources)::text[] IS NULL OR integration = ANY(sqlc.narg(sources)::text[]))
  AND (sqlc.narg(origin)::text IS NULL OR origin = sqlc.narg(origin))
  AND (sqlc.narg(session_id)::text IS NULL OR session_id = sqlc.narg(session_id))
  AND (sqlc.narg(automation_id)::text IS NULL OR automation_id = sqlc.narg(automation_id))
  AND (sqlc.narg(created_after)::timestamptz IS NULL OR created_at >= sqlc.narg(created_after))
  AND (sqlc.narg(created_before)::timestamptz IS NULL OR created_at < sqlc.narg(created_before));

-- name: InvocationOutcomesSince :many
-- How many of the organization's invocations ended in each status since
-- @since, per @bucket_seconds window (the window's start), for the
-- operations page. Served by action_invocations_org_completed.
SELECT to_timestamp(floor(extract(epoch FROM completed_at) / @bucket_seconds::float8) * @bucket_seconds::float8)::timestamptz AS window_start,
       status, count(*) AS n
FROM action_invocations
WHERE organization_id = @organization_id AND completed_at >= @since::timestamptz
GROUP BY 1, 2
ORDER BY 1, 2;

-- name: InvocationInFlight :many
-- The organization's invocations not yet ended, by status.
SELECT status, count(*) AS n, min(created_at)::timestamptz AS oldest
FROM action_invocations
WHERE organization_id = @organization_id AND status IN ('pending', 'approved', 'executing')
GROUP BY status;

-- name: OrgQueueStates :many
-- The organization's unfinished invocations by where they stand: pending
-- (awaiting approval), queued (approved, never started: waiting for a
-- worker, a token, a gate or the organization's pause), retrying
-- (approved again after an attempt: waiting for its retry or a provider's
-- Retry-After) and running (executing), each with the earliest moment one
-- of them entered that state and its age by the database clock.
SELECT state::text AS state, count(*) AS n, min(since)::timestamptz AS oldest,
       extract(epoch FROM now() - min(since))::float8 AS age_seconds
FROM (
    SELECT CASE WHEN status = 'pending' THEN 'pending'
                WHEN status = 'executing' THEN 'running'
                WHEN started_at IS NULL THEN 'queued'
                ELSE 'retrying' END AS state,
           CASE WHEN status = 'pending' THEN created_at
                WHEN status = 'approved' AND started_at IS NULL THEN coalesce(approved_at, created_at)
                ELSE updated_at END AS since
    FROM action_invocations
    WHERE organization_id = @organization_id AND status IN ('pending', 'approved', 'executing')
) AS s
GROUP BY state;

-- name: InvocationApprove :one
WITH prev AS (
    SELECT a.id, a.status FROM action_invocations AS a WHERE a.id = @id FOR UPDATE
), next AS (
    UPDATE action_invocations AS i
    SET status = 'approved', approved_by = @actor, approved_at = now(), updated_at = now(), event_seq = i.event_seq + 1,
        approval_trace = sqlc.narg(trace_context), approved_digest = i.intent_digest
    FROM prev WHERE i.id = prev.id AND prev.status = 'pending'
    RETURNING i.*
), event AS (
    INSERT INTO invocation_events (invocation_id, organization_id, seq, type, from_status, to_status, actor, reason)
    SELECT next.id, next.organization_id, next.event_seq, 'approved', prev.status, next.status, @actor,
        'intent ' || left(next.approved_digest, 12) FROM next, prev
)
SELECT * FROM next;

-- name: InvocationDeny :one
WITH prev AS (
    SELECT a.id, a.status FROM action_invocations AS a WHERE a.id = @id FOR UPDATE
), next AS (
    UPDATE action_invocations AS i
    SET status = 'denied', denied_reason = @denied_reason, error = sqlc.narg(reason), approved_by = @actor,
        approved_at = now(), completed_at = now(), params_sealed = NULL, updated_at = now(), event_seq = i.event_seq + 1
    FROM prev WHERE i.id = prev.id AND prev.status = 'pending'
    RETURNING i.*
), event AS (
    INSERT INTO invocation_events (invocation_id, organization_id, seq, type, from_status, to_status, actor, reason)
    SELECT next.id, next.organization_id, next.event_seq, 'denied', prev.status, next.status, @actor, sqlc.narg(reason) FROM next, prev
)
SELECT * FROM next;

-- name: InvocationExpire :one
-- Expires a pending invocation whose approval window is still the one its
-- caller read, not one an intent change opened since.
WITH prev AS (
    SELECT a.id, a.status, a.expires_at FROM action_invocations AS a WHERE a.id = @id FOR UPDATE
), next AS (
    UPDATE action_invocations AS i
    SET status = 'expired', denied_reason = 'expired', completed_at = now(), params_sealed = NULL, updated_at = now(), event_seq = i.event_seq + 1
    FROM prev WHERE i.id = prev.id AND prev.status = 'pending' AND prev.expires_at IS NOT DISTINCT FROM sqlc.narg(expires_at)::timestamptz
    RETURNING i.*
), event AS (
    INSERT INTO invocation_events (invocation_id, organization_id, seq, type, from_status, to_status, actor, reason)
    SELECT next.id, next.organization_id, next.event_seq, 'expired', prev.status, next.status, NULL, 'approval window closed' FROM next, prev
)
SELECT * FROM next;

-- name: InvocationCancel :one
-- reason, when given, says why on the cancelled event (a revocation's
-- withdrawal); a caller's own cancel has none.
WITH prev AS (
    SELECT a.id, a.status FROM action_invocations AS a WHERE a.id = @id FOR UPDATE
), next AS (
    UPDATE action_invocations AS i
    SET status = 'cancelled', completed_at = now(), params_sealed = NULL, updated_at = now(), event_seq = i.event_seq + 1
    FROM prev WHERE i.id = prev.id AND prev.status IN ('pending', 'approved')
    RETURNING i.*
), event AS (
    INSERT INTO invocation_events (invocation_id, organization_id, seq, type, from_status, to_status, actor, reason)
    SELECT next.id, next.organization_id, next.event_seq, 'cancelled', prev.status, next.status, sqlc.narg(actor), sqlc.narg(reason) FROM next, prev
)
SELECT * FROM next;

-- name: InvocationStart :one
WITH prev AS (
    SELECT a.id, a.status FROM action_invocations AS a WHERE a.id = @id FOR UPDATE
), next AS (
    UPDATE action_invocations AS i
    SET status = 'executing', attempt = @attempt, started_at = coalesce(i.started_at, now()), nothing_done = false, updated_at = now(), event_seq = i.event_seq + 1
    FROM prev WHERE i.id = prev.id AND prev.status IN ('approved', 'executing')
    RETURNING i.*
), event AS (
    INSERT INTO invocation_events (invocation_id, organization_id, seq, type, from_status, to_status, actor, reason)
    SELECT next.id, next.organization_id, next.event_seq, 'started', prev.status, next.status, NULL, 'attempt ' || @attempt::int FROM next, prev
)
SELECT * FROM next;

-- name: InvocationCompleteMany :many
-- Records the successful calls of executing invocations, one per element
-- of the arrays, in one statement: completed, with their events. The
-- answer is the ids it completed; one no longer executing is not in it
-- (returning whole rows no caller reads cost a tenth of the statement). Rows are locked in id order, so two of these never deadlock.
-- An empty provider ref, a duration of -1 and a nil steps element are
-- NULL. The arrays are read side by side (set-returning functions in one
-- select list run in step; a subscript walks a variable-length array from
-- its start).
-- Every join is a scan of the input's rows with an index lookup each (see
-- InvocationBeginMany).
WITH prev AS (
    SELECT a.id, a.status, u.result, nullif(u.provider_ref, '') AS provider_ref, u.conflict, u.steps,
        nullif(u.duration_ms, -1) AS duration_ms
    FROM (SELECT unnest(@ids::uuid[]) AS id, unnest(@results::jsonb[]) AS result,
            unnest(@provider_refs::text[]) AS provider_ref, unnest(@conflicts::bool[]) AS conflict,
            unnest(@steps::jsonb[]) AS steps, unnest(@durations_ms::int[]) AS duration_ms) AS u
    JOIN action_invocations AS a ON a.id = u.id
    ORDER BY a.id FOR UPDATE OF a
), next AS (
    UPDATE action_invocations AS i
    SET status = 'completed', result = prev.result, provider_ref = prev.provider_ref, conflict = prev.conflict,
        steps = prev.steps, error = NULL, duration_ms = prev.duration_ms, completed_at = now(), params_sealed = NULL,
        updated_at = now(), event_seq = i.event_seq + 1
    FROM prev
    WHERE i.id = prev.id AND prev.status = 'executing'
    RETURNING i.id, i.organization_id, i.event_seq, i.status, prev.status AS from_status
), event AS (
    INSERT INTO invocation_events (invocation_id, organization_id, seq, type, from_status, to_status, actor, reason)
    SELECT next.id, next.organization_id, next.event_seq, 'completed', next.from_status, next.status, NULL, NULL
    FROM next
)
SELECT id FROM next;

-- name: InvocationFail :one
-- A failure in the worker is a dead letter an operator may replay; it keeps
-- its sealed params for that replay until it is discarded.
WITH prev AS (
    SELECT a.id, a.status FROM action_invocations AS a WHERE a.id = @id FOR UPDATE
), next AS (
    UPDATE action_invocations AS i
    SET status = 'failed', error = @error, duration_ms = sqlc.narg(duration_ms), steps = sqlc.narg(steps), completed_at = now(), dead_lettered_at = now(), updated_at = now(), event_seq = i.event_seq + 1
    FROM prev WHERE i.id = prev.id AND prev.status IN ('approved', 'executing')
    RETURNING i.*
), event AS (
    INSERT INTO invocation_events (invocation_id, organization_id, seq, type, from_status, to_status, actor, reason)
    SELECT next.id, next.organization_id, next.event_seq, 'failed', prev.status, next.status, NULL, @error FROM next, prev
)
SELECT * FROM next;

-- name: InvocationSkip :one
WITH prev AS (
    SELECT a.id, a.status FROM action_invocations AS a WHERE a.id = @id FOR UPDATE
), next AS (
    UPDATE action_invocations AS i
    SET status = 'skipped', error = @error, completed_at = now(), params_sealed = NULL, updated_at = now(), event_seq = i.event_seq + 1
    FROM prev WHERE i.id = prev.id AND prev.status IN ('approved', 'executing')
    RETURNING i.*
), event AS (
    INSERT INTO invocation_events (invocation_id, organization_id, seq, type, from_status, to_status, actor, reason)
    SELECT next.id, next.organization_id, next.event_seq, 'skipped', prev.status, next.status, NULL, @error FROM next, prev
)
SELECT * FROM next;

-- name: InvocationScheduleRetry :one
-- nothing_done: the attempt's refusal did nothing (see migration 039).
WITH prev AS (
    SELECT a.id, a.status FROM action_invocations AS a WHERE a.id = @id FOR UPDATE
), next AS (
    UPDATE action_invocations AS i
    SET status = 'approved', error = @error, duration_ms = sqlc.narg(duration_ms), nothing_done = @nothing_done::bool, updated_at = now(), event_seq = i.event_seq + 1
    FROM prev WHERE i.id = prev.id AND prev.status = 'executing'
    RETURNING i.*
), event AS (
    INSERT INTO invocation_events (invocation_id, organization_id, seq, type, from_status, to_status, actor, reason)
    SELECT next.id, next.organization_id, next.event_seq, 'retry_scheduled', prev.status, next.status, NULL, @error FROM next, prev
)
SELECT * FROM next;

-- name: InvocationSnooze :one
-- A provider asked to wait (429 Retry-After); no attempt is spent.
-- nothing_done: the refusal did nothing (see migration 039).
WITH prev AS (
    SELECT a.id, a.status FROM action_invocations AS a WHERE a.id = @id FOR UPDATE
), next AS (
    UPDATE action_invocations AS i
    SET status = 'approved', error = @error, duration_ms = sqlc.narg(duration_ms), provider_waits = i.provider_waits + 1,
        nothing_done = @nothing_done::bool, updated_at = now(), event_seq = i.event_seq + 1
    FROM prev WHERE i.id = prev.id AND prev.status = 'executing'
    RETURNING i.*
), event AS (
    INSERT INTO invocation_events (invocation_id, organization_id, seq, type, from_status, to_status, actor, reason)
    SELECT next.id, next.organization_id, next.event_seq, 'snoozed', prev.status, next.status, NULL, @error FROM next, prev
)
SELECT * FROM next;

-- name: InvocationReplay :one
WITH prev AS (
    SELECT a.id, a.status FROM action_invocations AS a WHERE a.id = @id FOR UPDATE
), next AS (
    UPDATE action_invocations AS i
    SET status = 'approved', dead_lettered_at = NULL, completed_at = NULL, steps = NULL, replay_count = i.replay_count + 1,
        replayed_by = @actor, replayed_at = now(), job_id = @job_id, updated_at = now(), event_seq = i.event_seq + 1
    FROM prev WHERE i.id = prev.id AND prev.status = 'failed' AND i.dead_lettered_at IS NOT NULL AND i.discarded_at IS NULL
    RETURNING i.*
), event AS (
    INSERT INTO invocation_events (invocation_id, organization_id, seq, type, from_status, to_status, actor, reason)
    SELECT next.id, next.organization_id, next.event_seq, 'replayed', prev.status, next.status, @actor, NULL FROM next, prev
)
SELECT * FROM next;

-- name: InvocationDiscard :one
WITH prev AS (
    SELECT a.id, a.status FROM action_invocations AS a WHERE a.id = @id FOR UPDATE
), next AS (
    UPDATE action_invocations AS i
    SET discarded_by = @actor, discarded_at = now(), params_sealed = NULL, updated_at = now(), event_seq = i.event_seq + 1
    FROM prev WHERE i.id = prev.id AND prev.status = 'failed' AND i.dead_lettered_at IS NOT NULL AND i.discarded_at IS NULL
    RETURNING i.*
), event AS (
    INSERT INTO invocation_events (invocation_id, organization_id, seq, type, from_status, to_status, actor, reason)
    SELECT next.id, next.organization_id, next.event_seq, 'discarded', prev.status, next.status, @actor, NULL FROM next, prev
)
SELECT * FROM next;

-- name: InvocationListExpiredForUpdate :many
SELECT * FROM action_invocations
WHERE status = 'pending' AND expires_at <= now()
ORDER BY expires_at
LIMIT @max
FOR UPDATE SKIP LOCKED;

-- name: EventListByInvocation :many
SELECT * FROM invocation_events
WHERE invocation_id = @invocation_id AND organization_id = @organization_id
ORDER BY seq;

-- name: DeadLetterList :many
-- The page is chosen from action_invocations_dead_letters alone, then only
-- its rows are read (see InvocationListByOrg). With @sources (a token's
-- sources claim; NULL: any source), only the dead letters of the sources
-- it lists.
SELECT a.* FROM action_invocations a
JOIN (
    SELECT p.id, p.dead_lettered_at FROM action_invocations p
    WHERE p.organization_id = @organization_id AND p.dead_lettered_at IS NOT NULL AND p.discarded_at IS NULL
      AND (sqlc.narg(sources)::text[] IS NULL OR p.integration = ANY(sqlc.narg(sources)::text[]))
    ORDER BY p.dead_lettered_at DESC, p.id
    LIMIT @max OFFSET @skip
) AS page ON a.id = page.id
ORDER BY page.dead_lettered_at DESC, page.id;

-- name: DeadLetterCount :one
SELECT count(*) FROM action_invocations
WHERE organization_id = @organization_id AND dead_lettered_at IS NOT NULL AND discarded_at IS NULL
  AND (sqlc.narg(sources)::text[] IS NULL OR integration = ANY(sqlc.narg(sources)::text[]));

-- name: InvocationListByExternalIDs :many
SELECT * FROM action_invocations
WHERE organization_id = @organization_id AND external_id = ANY(@external_ids::text[]);

-- name: InvocationBeginMany :many
-- The workers' one statement before their calls, for the jobs beginning
-- at the same moment (one element of @ids and @attempts each, ids
-- distinct): it reads each invocation, its organization's do-not-contact
-- patterns, the quiet windows of the organization and of its bucket, the
-- organization's pause (its paused_at, the epoch when not paused), and
-- the version (last change) of the credentials it may use, and, when no gate can apply (no pause, no do-not-contact
-- pattern, no quiet window, must_run_before not passed) and the
-- invocation is approved or executing,
-- marks it executing as InvocationStart does, with its event. An
-- invocation that does not exist is not in the answer.
-- When a gate may apply it changes nothing: the worker evaluates the gates
-- and then starts with InvocationStart.
--
-- i is the row in the statement's snapshot (a data-modifying CTE's change
-- is not visible to the rest of the statement, and a transition committed
-- while the lock was awaited is not in it either): locked_status is the
-- status under the lock, started_before whether an earlier execution had
-- started and may have acted (started_at under the lock, before this
-- start, unless nothing_done says none did), started whether
-- it started, and the *_new columns the fields a start sets, computed from
-- the locked row as the update computes them (meaningless when not
-- started). Rows are locked in id order, so
-- two of these never deadlock. Every join is a scan of the input's rows
-- with an index lookup each, none joins two intermediate results: a kept
-- plan (dbutil.IndexPool) joins those in nested loops, pairwise.
WITH prev AS (
    SELECT a.id, a.status, a.started_at, a.nothing_done, a.organization_id, a.must_run_before, k.attempt,
        coalesce((SELECT array_agg(d.pattern ORDER BY d.pattern) FROM do_not_contact d
                  WHERE d.organization_id = a.organization_id), '{}')::text[] AS patterns,
        -- An envelope (external_id) may name another bucket than its
        -- source's (constraints.rate_bucket): it gets every window of the
        -- organization, and the worker keeps those of its bucket and of
        -- its source's own, so naming a bucket does not leave the quiet
        -- hours of the source's.
        coalesce((SELECT jsonb_agg(jsonb_build_object('bucket', q.bucket, 'time_zone', q.time_zone, 'start', q.start_minute, 'end', q.end_minute))
                  FROM quiet_hours q
                  WHERE q.organization_id = a.organization_id
                    AND (q.bucket = '' OR q.bucket = coalesce(a.rate_bucket, '') OR a.external_id IS NOT NULL)), '[]')::jsonb AS windows,
        coalesce((SELECT p.paused_at FROM org_pauses p WHERE p.organization_id = a.organization_id), 'epoch')::timestamptz AS paused_at,
        coalesce((SELECT max(c.updated_at) FROM credentials c
                  WHERE c.organization_id = a.organization_id AND c.integration = a.integration
                    AND (c.user_id = '' OR c.user_id = coalesce(a.user_id, ''))), 'epoch')::timestamptz AS credential_version
    FROM (SELECT unnest(@ids::uuid[]) AS id, unnest(@attempts::int[]) AS attempt) AS k
    JOIN action_invocations AS a ON a.id = k.id
    ORDER BY a.id FOR UPDATE OF a
), go AS (
    SELECT prev.*, (prev.status IN ('approved', 'executing') AND prev.paused_at = 'epoch'
        AND cardinality(prev.patterns) = 0 AND prev.windows = '[]'::jsonb
        AND (prev.must_run_before IS NULL OR prev.must_run_before > now()))::bool AS start
    FROM prev
), next AS (
    UPDATE action_invocations AS i
    SET status = 'executing', attempt = go.attempt,
        started_at = coalesce(i.started_at, now()), nothing_done = false, updated_at = now(), event_seq = i.event_seq + 1
    FROM go
    WHERE i.id = go.id AND go.start
    RETURNING i.id, i.organization_id, i.status, i.attempt, i.event_seq, go.status AS from_status
), event AS (
    INSERT INTO invocation_events (invocation_id, organization_id, seq, type, from_status, to_status, actor, reason)
    SELECT next.id, next.organization_id, next.event_seq, 'started', next.from_status, next.status, NULL, 'attempt ' || next.attempt
    FROM next
)
SELECT sqlc.embed(i), go.patterns, go.windows, go.paused_at, go.credential_version,
    go.status AS locked_status, (go.started_at IS NOT NULL AND NOT go.nothing_done)::bool AS started_before,
    go.start AS started,
    go.attempt::int AS attempt_new, coalesce(go.started_at, now())::timestamptz AS started_at_new,
    now()::timestamptz AS updated_at_new
FROM go
JOIN action_invocations i ON i.id = go.id;

-- name: RiverWakeQueue :exec
-- Tells River's producers that jobs of a queue became available, as
-- River's own inserts do (channel <schema>.river_insert), so a released
-- job is fetched at once rather than at the next poll.
SELECT pg_notify(current_schema() || '.river_insert', json_build_object('queue', @queue::text)::text);
