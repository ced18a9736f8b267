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

-- name: GateSettings :one
-- What the worker checks before a call, in one round trip: the org's
-- do-not-contact patterns and the quiet windows of the org and the bucket.
SELECT
    coalesce((SELECT array_agg(d.pattern ORDER BY d.pattern) FROM do_not_contact d
              WHERE d.organization_id = @organization_id), '{}')::text[] AS patterns,
    coalesce((SELECT jsonb_agg(jsonb_build_object('time_zone', q.time_zone, 'start', q.start_minute, 'end', q.end_minute))
              FROM quiet_hours q
              WHERE q.organization_id = @organization_id AND (q.bucket = '' OR q.bucket = @bucket::text)), '[]')::jsonb AS windows;
