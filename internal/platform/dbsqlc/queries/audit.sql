-- name: AuditLockChain :exec
-- Serialises the writers of one organization's chain until the
-- transaction ends.
SELECT pg_advisory_xact_lock(hashtextextended('outboxd.audit:' || @organization_id::text, 0));

-- name: AuditHead :one
SELECT seq, hash FROM audit_entries
WHERE organization_id = @organization_id
ORDER BY seq DESC
LIMIT 1;

-- name: AuditInsert :exec
INSERT INTO audit_entries (organization_id, seq, occurred_at, actor_subject, actor_kind, actor_role, client_addr,
    action, target_type, target_id, before_state, after_state, prev_hash, hash, sources)
VALUES (@organization_id, @seq, @occurred_at, @actor_subject, @actor_kind, @actor_role, @client_addr,
    @action, @target_type, @target_id, @before_state, @after_state, @prev_hash, @hash, @sources::text[]);

-- name: AuditList :many
-- Newest first, before the cursor (before_seq 0: from the newest). With
-- sources (NULL: any), only the entries that name one of them; the caller
-- drops those that also name another (internal/domain/audit), which the
-- planner could not estimate: it would take a common source for a rare
-- one and read all its entries for a page.
SELECT * FROM audit_entries
WHERE organization_id = @organization_id
  AND (@before_seq::bigint = 0 OR seq < @before_seq::bigint)
  AND (@actor::text = '' OR actor_subject = @actor::text)
  AND (@action::text = '' OR action = @action::text OR action LIKE @action::text || '.%')
  AND (@target_type::text = '' OR target_type = @target_type::text)
  AND (@target_id::text = '' OR target_id = @target_id::text)
  AND (sqlc.narg('since')::timestamptz IS NULL OR occurred_at >= sqlc.narg('since')::timestamptz)
  AND (sqlc.narg('until')::timestamptz IS NULL OR occurred_at < sqlc.narg('until')::timestamptz)
  AND (sqlc.narg('sources')::text[] IS NULL OR sources && sqlc.narg('sources')::text[])
ORDER BY seq DESC
LIMIT @max_rows;

-- name: AuditExport :many
-- Oldest first, after the cursor, one batch of an export.
SELECT * FROM audit_entries
WHERE organization_id = @organization_id AND seq > @after_seq
ORDER BY seq
LIMIT @max_rows;

-- name: AuditAnchor :one
-- Where an organization's chain starts once retention deleted its oldest
-- entries; no row: at seq 1.
SELECT * FROM audit_anchors WHERE organization_id = @organization_id;

-- name: AuditOldest :many
-- The oldest entries of an organization's chain, for retention to find the
-- front it deletes.
SELECT seq, occurred_at, hash FROM audit_entries
WHERE organization_id = @organization_id
ORDER BY seq
LIMIT @max_rows;

-- name: AuditDeleteThrough :execrows
-- Deletes the front of an organization's chain, through seq @through.
DELETE FROM audit_entries WHERE organization_id = @organization_id AND seq <= @through::bigint;

-- name: AuditSetAnchor :exec
INSERT INTO audit_anchors (organization_id, pruned_through, prev_hash, pruned_before, pruned_at, pruned_total)
VALUES (@organization_id, @pruned_through, @prev_hash, @pruned_before, @pruned_at, @deleted::bigint)
ON CONFLICT (organization_id) DO UPDATE SET
    pruned_through = EXCLUDED.pruned_through, prev_hash = EXCLUDED.prev_hash,
    pruned_before = EXCLUDED.pruned_before, pruned_at = EXCLUDED.pruned_at,
    pruned_total = audit_anchors.pruned_total + EXCLUDED.pruned_total;

-- name: AuditOrgs :many
-- The organizations with audit entries, read by skipping through the
-- primary key (a loose index scan: one probe per organization).
WITH RECURSIVE orgs AS (
    (SELECT organization_id FROM audit_entries ORDER BY organization_id LIMIT 1)
    UNION ALL
    SELECT (SELECT e.organization_id FROM audit_entries e
            WHERE e.organization_id > orgs.organization_id
            ORDER BY e.organization_id LIMIT 1)
    FROM orgs WHERE orgs.organization_id IS NOT NULL
)
SELECT organization_id::text FROM orgs WHERE organization_id IS NOT NULL;
