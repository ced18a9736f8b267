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
