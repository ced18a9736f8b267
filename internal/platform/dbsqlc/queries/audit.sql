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
    action, target_type, target_id, before_state, after_state, prev_hash, hash)
VALUES (@organization_id, @seq, @occurred_at, @actor_subject, @actor_kind, @actor_role, @client_addr,
    @action, @target_type, @target_id, @before_state, @after_state, @prev_hash, @hash);

-- name: AuditList :many
-- Newest first, before the cursor (before_seq 0: from the newest).
SELECT * FROM audit_entries
WHERE organization_id = @organization_id
  AND (@before_seq::bigint = 0 OR seq < @before_seq::bigint)
  AND (@actor::text = '' OR actor_subject = @actor::text)
  AND (@action::text = '' OR action = @action::text OR action LIKE @action::text || '.%')
  AND (@target_type::text = '' OR target_type = @target_type::text)
  AND (@target_id::text = '' OR target_id = @target_id::text)
  AND (sqlc.narg('since')::timestamptz IS NULL OR occurred_at >= sqlc.narg('since')::timestamptz)
  AND (sqlc.narg('until')::timestamptz IS NULL OR occurred_at < sqlc.narg('until')::timestamptz)
ORDER BY seq DESC
LIMIT @max_rows;

-- name: AuditExport :many
-- Oldest first, after the cursor, one batch of an export.
SELECT * FROM audit_entries
WHERE organization_id = @organization_id AND seq > @after_seq
ORDER BY seq
LIMIT @max_rows;
