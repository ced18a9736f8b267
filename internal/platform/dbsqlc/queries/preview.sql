-- Invocation previews (migration 035, internal/domain/preview).

-- name: PreviewUpsert :execrows
-- Records the rendering of an invocation's preview, replacing an earlier
-- one (a job that ran again), while the invocation's intent is still the
-- one rendered (intent_digest): a rendering of params or an intent changed
-- since (an edit, a re-ask) is dropped, its new job renders them.
INSERT INTO invocation_previews (invocation_id, organization_id, status, preview, note, rendered_at)
SELECT i.id, @organization_id, @status, @preview, @note, now()
FROM action_invocations AS i
WHERE i.id = @invocation_id AND i.intent_digest IS NOT DISTINCT FROM sqlc.narg(intent_digest)::text
ON CONFLICT (invocation_id) DO UPDATE
SET status = excluded.status, preview = excluded.preview, note = excluded.note, rendered_at = excluded.rendered_at;

-- name: PreviewGet :one
SELECT * FROM invocation_previews WHERE organization_id = @organization_id AND invocation_id = @invocation_id;

-- name: PreviewDelete :exec
-- Drops an invocation's preview when its params or intent change (an
-- edit, a re-ask), in that transaction, with the new preview job: until it
-- renders, there is no preview, never the old one.
DELETE FROM invocation_previews WHERE invocation_id = @invocation_id;
