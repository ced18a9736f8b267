-- name: RetentionInvocationOrgs :many
-- The organizations with finished invocations, read by skipping through
-- the (organization_id, completed_at) index of finished invocations (a
-- loose index scan: one probe per organization, not one row per
-- invocation).
WITH RECURSIVE orgs AS (
    (SELECT organization_id FROM action_invocations
     WHERE completed_at IS NOT NULL ORDER BY organization_id LIMIT 1)
    UNION ALL
    SELECT (SELECT i.organization_id FROM action_invocations i
            WHERE i.completed_at IS NOT NULL AND i.organization_id > orgs.organization_id
            ORDER BY i.organization_id LIMIT 1)
    FROM orgs WHERE orgs.organization_id IS NOT NULL
)
SELECT organization_id::text FROM orgs WHERE organization_id IS NOT NULL;

-- name: RetentionDeleteInvocations :one
-- Deletes up to @max_rows invocations of an organization that finished
-- before @cutoff, with their events (which have no foreign key, migration
-- 017) and their Slack messages (by cascade). Only terminal statuses
-- qualify: an invocation that is pending, approved or executing, or a dead
-- letter being replayed, is never taken. Rows another transaction holds
-- are skipped, not waited for. Oldest first: the order makes the
-- (organization_id, completed_at) index of finished invocations the plan,
-- which stops at the cutoff, where a sequential scan would read past every
-- newer row to fill a batch.
WITH doomed AS (
    DELETE FROM action_invocations i
    WHERE i.id IN (
        SELECT c.id FROM action_invocations c
        WHERE c.organization_id = @organization_id
          AND c.completed_at IS NOT NULL AND c.completed_at < @cutoff::timestamptz
          AND c.status IN ('completed', 'failed', 'denied', 'expired', 'skipped', 'cancelled')
        ORDER BY c.completed_at
        LIMIT @max_rows
        FOR UPDATE SKIP LOCKED)
      AND i.status IN ('completed', 'failed', 'denied', 'expired', 'skipped', 'cancelled')
    RETURNING i.id
), events AS (
    DELETE FROM invocation_events e USING doomed WHERE e.invocation_id = doomed.id
    RETURNING 1
)
SELECT (SELECT count(*) FROM doomed)::bigint AS invocations,
       (SELECT count(*) FROM events)::bigint AS events;

-- name: RetentionWebhooks :many
-- Every webhook endpoint, of every organization.
SELECT id, organization_id FROM webhooks ORDER BY id;

-- name: RetentionDeleteWebhookDeliveries :execrows
-- Deletes up to @max_rows deliveries of an endpoint created before
-- @cutoff that are over (delivered, dead or cancelled); one still pending
-- or retrying stays.
DELETE FROM webhook_deliveries d
WHERE d.id IN (
    SELECT c.id FROM webhook_deliveries c
    WHERE c.webhook_id = @webhook_id AND c.created_at < @cutoff
      AND c.status IN ('delivered', 'dead', 'cancelled')
    ORDER BY c.created_at
    LIMIT @max_rows
    FOR UPDATE SKIP LOCKED);

-- name: RetentionClearPreviousSecrets :execrows
-- Forgets the webhook signing secrets rotations replaced whose overlap has
-- ended (by Postgres's clock, as the deliveries decide): they sign nothing
-- any more, and a secret no longer valid is not kept. A rotation racing
-- this keeps the previous secret it sets (its previous_until is checked
-- again on the row it wrote).
UPDATE webhooks SET previous_secret_sealed = NULL, previous_until = NULL
WHERE previous_until <= now();

-- name: RetentionRecord :exec
-- Adds what a run deleted of each organization in each table (parallel
-- arrays) to retention_runs.
INSERT INTO retention_runs (organization_id, table_name, last_run_at, last_deleted, deleted_total)
SELECT unnest(@orgs::text[]), unnest(@tables::text[]), now(), unnest(@counts::bigint[]), unnest(@counts::bigint[])
ON CONFLICT (organization_id, table_name) DO UPDATE SET
    last_run_at = now(), last_deleted = EXCLUDED.last_deleted,
    deleted_total = retention_runs.deleted_total + EXCLUDED.last_deleted;

-- name: RetentionRunsOf :many
-- What retention deleted of an organization, by table.
SELECT table_name, last_run_at, last_deleted, deleted_total FROM retention_runs
WHERE organization_id = @organization_id ORDER BY table_name;
