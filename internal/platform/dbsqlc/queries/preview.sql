-- Invocation previews (migration 035, internal/domain/preview).

-- name: PreviewUpsert :exec
-- Records the rendering of an invocation's preview, replacing an earlier
-- one (a job that ran again).
INSERT INTO invocation_previews (invocation_id, organization_id, status, preview, note, rendered_at)
VALUES (@invocation_id, @organization_id, @status, @preview, @note, now())
ON CONFLICT (invocation_id) DO UPDATE
SET status = excluded.status, preview = excluded.preview, note = excluded.note, rendered_at = excluded.rendered_at;

-- name: PreviewGet :one
SELECT * FROM invocation_previews WHERE organization_id = @organization_id AND invocation_id = @invocation_id;
