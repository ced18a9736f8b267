-- Sealed intents and approvers' edits (package intent, docs/intents.md).

-- name: InvocationEdit :one
-- An approver's edit of a pending invocation's params: the new params
-- (redacted) and exact ones (sealed, or NULL), the original params kept at
-- the first edit, the edit appended, the intent recomputed, and an edited
-- event. The invocation stays pending.
WITH prev AS (
    SELECT a.id, a.status FROM action_invocations AS a WHERE a.id = @id FOR UPDATE
), next AS (
    UPDATE action_invocations AS i
    SET params = @params, params_sealed = sqlc.narg(params_sealed),
        params_original = coalesce(i.params_original, i.params),
        edits = coalesce(i.edits, '[]'::jsonb) || jsonb_build_array(@edit::jsonb),
        intent_digest = @intent_digest, intent = @intent, updated_at = now(), event_seq = i.event_seq + 1
    FROM prev WHERE i.id = prev.id AND prev.status = 'pending'
    RETURNING i.*
), event AS (
    INSERT INTO invocation_events (invocation_id, organization_id, seq, type, from_status, to_status, actor, reason)
    SELECT next.id, next.organization_id, next.event_seq, 'edited', prev.status, next.status, @actor, sqlc.narg(reason) FROM next, prev
)
SELECT * FROM next;

-- name: InvocationIntentChanged :one
-- What an approval approved changed before the call: the invocation goes
-- back to pending with a new approval window, its new parked job, the
-- intent as it is now and what changed, and an intent_changed event (a
-- new approval request). started_at is cleared unless an earlier
-- execution had started.
WITH prev AS (
    SELECT a.id, a.status FROM action_invocations AS a WHERE a.id = @id FOR UPDATE
), next AS (
    UPDATE action_invocations AS i
    SET status = 'pending', approved_by = NULL, approved_at = NULL, approved_digest = NULL, approval_trace = NULL,
        expires_at = @expires_at, job_id = @job_id, intent_digest = @intent_digest, intent = @intent,
        intent_changes = @changes::text[], mode = coalesce(sqlc.narg(mode), i.mode),
        started_at = CASE WHEN @started_before::bool THEN i.started_at END,
        updated_at = now(), event_seq = i.event_seq + 1
    FROM prev WHERE i.id = prev.id AND prev.status IN ('approved', 'executing')
    RETURNING i.*
), event AS (
    INSERT INTO invocation_events (invocation_id, organization_id, seq, type, from_status, to_status, actor, reason)
    SELECT next.id, next.organization_id, next.event_seq, 'intent_changed', prev.status, next.status, NULL, sqlc.narg(reason) FROM next, prev
)
SELECT * FROM next;

-- name: InvocationIntentRekey :exec
-- A pending invocation's intent made again with the primary secrets key,
-- when the key it was made with left the ring: what is approved next.
UPDATE action_invocations SET intent_digest = @intent_digest, intent = @intent
WHERE id = @id AND status = 'pending';
