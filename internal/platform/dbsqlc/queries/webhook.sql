-- name: WebhookInsert :one
INSERT INTO webhooks (id, organization_id, url, events, description, secret_sealed)
VALUES (@id, @organization_id, @url, @events, @description, @secret_sealed)
RETURNING *;

-- name: WebhookGet :one
-- previous_signs: whether the secret the last rotation replaced still
-- signs, by Postgres's clock, as the deliveries decide (WebhookGetByID).
SELECT sqlc.embed(webhooks), coalesce(previous_until > now(), false)::boolean AS previous_signs
FROM webhooks WHERE id = @id AND organization_id = @organization_id;

-- name: WebhookGetByID :one
-- The endpoint for its deliveries' jobs, with its previous secret while it
-- still signs (by Postgres's clock, which set previous_until).
SELECT sqlc.embed(webhooks),
    (CASE WHEN previous_until > now() THEN previous_secret_sealed END)::bytea AS previous_signing_sealed
FROM webhooks WHERE id = @id;

-- name: WebhookList :many
-- previous_signs as in WebhookGet.
SELECT sqlc.embed(webhooks), coalesce(previous_until > now(), false)::boolean AS previous_signs
FROM webhooks WHERE organization_id = @organization_id ORDER BY created_at, id;

-- name: WebhookUpdate :one
-- Enabling an endpoint clears its disabling and its failure streak. A
-- previous secret whose overlap has ended (Postgres's clock) is forgotten.
UPDATE webhooks SET
    previous_secret_sealed = CASE WHEN previous_until > now() THEN previous_secret_sealed END,
    previous_until = CASE WHEN previous_until > now() THEN previous_until END,
    url = coalesce(sqlc.narg(url), url),
    events = coalesce(sqlc.narg(events)::text[], events),
    description = coalesce(sqlc.narg(description), description),
    enabled = coalesce(sqlc.narg(enabled), enabled),
    disabled_at = CASE WHEN sqlc.narg(enabled)::boolean THEN NULL ELSE disabled_at END,
    disabled_reason = CASE WHEN sqlc.narg(enabled)::boolean THEN NULL ELSE disabled_reason END,
    failing_since = CASE WHEN sqlc.narg(enabled)::boolean THEN NULL ELSE failing_since END,
    updated_at = now()
WHERE id = @id AND organization_id = @organization_id
RETURNING *;

-- name: WebhookSetSecret :one
-- The secret replaced keeps signing for overlap_seconds (none at 0),
-- sealed as it was; a secret replaced before it no longer signs.
UPDATE webhooks SET
    secret_sealed = @secret_sealed,
    previous_secret_sealed = CASE WHEN @overlap_seconds::float8 > 0 THEN secret_sealed END,
    previous_until = CASE WHEN @overlap_seconds::float8 > 0 THEN now() + make_interval(secs => @overlap_seconds::float8) END,
    updated_at = now()
WHERE id = @id AND organization_id = @organization_id
RETURNING *;

-- name: WebhookDelete :execrows
DELETE FROM webhooks WHERE id = @id AND organization_id = @organization_id;

-- name: WebhookEndpointsEnabled :many
-- Every enabled endpoint: the relay reads the events of their
-- organizations only.
SELECT id, organization_id, events FROM webhooks
WHERE enabled
ORDER BY created_at, id;

-- name: WebhookSucceeded :exec
UPDATE webhooks SET failing_since = NULL WHERE id = @id AND failing_since IS NOT NULL;

-- name: WebhookFailed :one
-- Records a failed attempt; an endpoint failing for at least
-- disable_after_seconds when a delivery dies is disabled.
UPDATE webhooks SET
    failing_since = coalesce(failing_since, now()),
    enabled = CASE WHEN @dead::boolean AND coalesce(failing_since, now()) <= now() - make_interval(secs => @disable_after_seconds::float8) THEN false ELSE enabled END,
    disabled_at = CASE WHEN enabled AND @dead::boolean AND coalesce(failing_since, now()) <= now() - make_interval(secs => @disable_after_seconds::float8) THEN now() ELSE disabled_at END,
    disabled_reason = CASE WHEN enabled AND @dead::boolean AND coalesce(failing_since, now()) <= now() - make_interval(secs => @disable_after_seconds::float8)
        THEN 'failing since ' || to_char(coalesce(failing_since, now()) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') ELSE disabled_reason END,
    updated_at = now()
WHERE id = @id
RETURNING *;

-- name: DeliveryInsert :one
INSERT INTO webhook_deliveries (id, webhook_id, organization_id, event_id, event_type, payload)
VALUES (@id, @webhook_id, @organization_id, @event_id, @event_type, @payload)
ON CONFLICT DO NOTHING
RETURNING id;

-- name: DeliveryGet :one
SELECT * FROM webhook_deliveries WHERE id = @id;

-- name: DeliveryList :many
-- An endpoint's deliveries, newest first; with @sources (a token's sources
-- claim; NULL: any source), only the deliveries of the events of
-- invocations of the sources it lists (one whose invocation retention has
-- deleted is of none).
SELECT d.* FROM webhook_deliveries d
WHERE d.webhook_id = @webhook_id AND d.organization_id = @organization_id
  AND (sqlc.narg(sources)::text[] IS NULL OR EXISTS (
      SELECT FROM invocation_events e JOIN action_invocations i ON i.id = e.invocation_id
      WHERE e.id = d.event_id AND e.organization_id = d.organization_id
        AND i.integration = ANY(sqlc.narg(sources)::text[])))
ORDER BY d.created_at DESC, d.id DESC
LIMIT @max OFFSET @skip;

-- name: DeliveryRecord :one
-- Records one attempt: status is delivered, retrying, dead or cancelled.
UPDATE webhook_deliveries SET
    status = @status,
    attempts = attempts + CASE WHEN @attempted::boolean THEN 1 ELSE 0 END,
    last_status_code = sqlc.narg(status_code),
    last_error = sqlc.narg(error),
    last_latency_ms = sqlc.narg(latency_ms),
    attempt_log = CASE WHEN @attempted::boolean THEN attempt_log || jsonb_build_array(jsonb_build_object(
        'at', now(), 'status_code', sqlc.narg(status_code)::int, 'latency_ms', sqlc.narg(latency_ms)::int, 'error', sqlc.narg(error)::text))
        ELSE attempt_log END,
    next_attempt_at = sqlc.narg(next_attempt_at),
    delivered_at = CASE WHEN @status = 'delivered' THEN now() ELSE delivered_at END,
    updated_at = now()
WHERE id = @id
RETURNING *;
