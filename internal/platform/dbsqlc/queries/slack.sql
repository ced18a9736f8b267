-- name: SlackSettingsGet :one
SELECT * FROM slack_settings WHERE organization_id = @organization_id;

-- name: SlackChannelPut :one
INSERT INTO slack_settings (organization_id, channel, updated_by) VALUES (@organization_id, sqlc.narg(channel), @updated_by)
ON CONFLICT (organization_id) DO UPDATE SET channel = EXCLUDED.channel, updated_by = EXCLUDED.updated_by, updated_at = now()
RETURNING *;

-- name: SlackApproversPut :one
INSERT INTO slack_settings (organization_id, approvers, updated_by) VALUES (@organization_id, @approvers, @updated_by)
ON CONFLICT (organization_id) DO UPDATE SET approvers = EXCLUDED.approvers, updated_by = EXCLUDED.updated_by, updated_at = now()
RETURNING *;

-- name: SlackChannelOrganizations :many
-- The organizations with a channel of their own.
SELECT organization_id FROM slack_settings WHERE channel IS NOT NULL;

-- name: SlackMessageGet :one
SELECT * FROM slack_messages WHERE invocation_id = @invocation_id;

-- name: SlackMessageInsert :exec
INSERT INTO slack_messages (invocation_id, organization_id, channel, ts) VALUES (@invocation_id, @organization_id, @channel, @ts)
ON CONFLICT (invocation_id) DO UPDATE SET channel = EXCLUDED.channel, ts = EXCLUDED.ts;
