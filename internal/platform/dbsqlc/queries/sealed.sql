-- The sealed values of every organization, for `outboxd secrets rotate`
-- (internal/domain/sealed/sealedstore). Each column is read in key order
-- from a cursor (inclusive: the store drops the cursor's own row) and
-- re-sealed by compare-and-swap, so a value the daemon wrote meanwhile is
-- left as it wrote it.

-- name: SealedCredentialsFrom :many
SELECT organization_id, integration, user_id, sealed FROM credentials
WHERE (organization_id, integration, user_id) >= (@organization_id::text, @integration::text, @user_id::text)
ORDER BY organization_id, integration, user_id
LIMIT @max_rows;

-- name: SealedCredentialsSwap :many
-- Answers the rows swapped: the rotation counts them by organization.
UPDATE credentials c SET sealed = u.new_sealed
FROM (SELECT unnest(@organization_ids::text[]) AS organization_id, unnest(@integrations::text[]) AS integration,
        unnest(@user_ids::text[]) AS user_id, unnest(@old_sealed::bytea[]) AS old_sealed,
        unnest(@new_sealed::bytea[]) AS new_sealed) AS u
WHERE c.organization_id = u.organization_id AND c.integration = u.integration AND c.user_id = u.user_id
    AND c.sealed = u.old_sealed
RETURNING c.organization_id, c.integration, c.user_id;

-- name: SealedWebhooksFrom :many
SELECT id, organization_id, secret_sealed FROM webhooks
WHERE id >= @id
ORDER BY id
LIMIT @max_rows;

-- name: SealedWebhooksSwap :many
UPDATE webhooks w SET secret_sealed = u.new_sealed
FROM (SELECT unnest(@ids::uuid[]) AS id, unnest(@old_sealed::bytea[]) AS old_sealed,
        unnest(@new_sealed::bytea[]) AS new_sealed) AS u
WHERE w.id = u.id AND w.secret_sealed = u.old_sealed
RETURNING w.id;

-- name: SealedWebhooksPreviousFrom :many
-- The webhooks' previous signing secrets (a rotation's overlap) that still
-- sign: one whose overlap has ended is deleted by the next retention run,
-- and is neither re-sealed nor counted unreadable meanwhile.
SELECT id, organization_id, previous_secret_sealed::bytea AS previous_secret_sealed FROM webhooks
WHERE id >= @id AND previous_secret_sealed IS NOT NULL AND previous_until > now()
ORDER BY id
LIMIT @max_rows;

-- name: SealedWebhooksPreviousSwap :many
UPDATE webhooks w SET previous_secret_sealed = u.new_sealed
FROM (SELECT unnest(@ids::uuid[]) AS id, unnest(@old_sealed::bytea[]) AS old_sealed,
        unnest(@new_sealed::bytea[]) AS new_sealed) AS u
WHERE w.id = u.id AND w.previous_secret_sealed = u.old_sealed
RETURNING w.id;

-- name: SealedParamsFrom :many
SELECT id, organization_id, params_sealed FROM action_invocations
WHERE id >= @id AND params_sealed IS NOT NULL
ORDER BY id
LIMIT @max_rows;

-- name: SealedParamsSwap :many
UPDATE action_invocations i SET params_sealed = u.new_sealed
FROM (SELECT unnest(@ids::uuid[]) AS id, unnest(@old_sealed::bytea[]) AS old_sealed,
        unnest(@new_sealed::bytea[]) AS new_sealed) AS u
WHERE i.id = u.id AND i.params_sealed = u.old_sealed
RETURNING i.id;

-- name: SealedColumns :many
-- The bytea columns named like sealed values in the current schema: the
-- test holds the store's list of columns to it.
SELECT (table_name::text || '.' || column_name::text)::text AS name FROM information_schema.columns
WHERE table_schema = current_schema() AND data_type = 'bytea' AND column_name::text LIKE '%sealed%'
ORDER BY 1;
