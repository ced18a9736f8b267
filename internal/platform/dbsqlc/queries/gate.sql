-- name: QuietHoursList :many
SELECT * FROM quiet_hours WHERE organization_id = @organization_id ORDER BY bucket;

-- name: QuietHoursDeleteAll :exec
DELETE FROM quiet_hours WHERE organization_id = @organization_id;

-- name: QuietHoursInsert :exec
INSERT INTO quiet_hours (organization_id, bucket, time_zone, start_minute, end_minute, updated_by)
VALUES (@organization_id, @bucket, @time_zone, @start_minute, @end_minute, @updated_by);

-- name: DoNotContactList :many
SELECT pattern FROM do_not_contact WHERE organization_id = @organization_id ORDER BY pattern;

-- name: DoNotContactDeleteAll :exec
DELETE FROM do_not_contact WHERE organization_id = @organization_id;

-- name: DoNotContactInsert :exec
INSERT INTO do_not_contact (organization_id, pattern, created_by) VALUES (@organization_id, @pattern, @created_by)
ON CONFLICT DO NOTHING;

-- name: OrgPauseGet :one
SELECT * FROM org_pauses WHERE organization_id = @organization_id;

-- name: OrgPausedSince :many
-- The pause of @organization_id, if any (no row when none): what a worker
-- asks before it takes a token for a job an earlier pause held.
SELECT paused_at FROM org_pauses WHERE organization_id = @organization_id;

-- name: OrgPauseInsert :one
-- Pauses @organization_id; pausing a paused organization keeps the first
-- pause (who and since when).
INSERT INTO org_pauses (organization_id, paused_by) VALUES (@organization_id, @paused_by)
ON CONFLICT (organization_id) DO UPDATE SET paused_by = org_pauses.paused_by
RETURNING *;

-- name: OrgPauseDelete :many
-- Resumes @organization_id; no row when it was not paused.
DELETE FROM org_pauses WHERE organization_id = @organization_id RETURNING *;


-- name: OrgPausesEnded :many
-- Those of the pauses named (@orgs[i]'s, begun at @paused_ats[i]) that
-- have ended: the organization is not paused, or by a later pause. What a
-- worker asks of the pauses that held its jobs lately.
SELECT h.organization_id::text AS organization_id, h.paused_at::timestamptz AS paused_at
FROM (SELECT unnest(@orgs::text[]) AS organization_id, unnest(@paused_ats::timestamptz[]) AS paused_at) h
WHERE NOT EXISTS (
    SELECT FROM org_pauses p WHERE p.organization_id = h.organization_id AND p.paused_at = h.paused_at);
