-- name: ListenerRegister :exec
-- Lists @listener_id as listening to @organization_id's events until
-- @ttl_seconds from now, once every transaction that checked for the
-- organization's listeners without seeing it has ended (the exclusive side
-- of the advisory lock outboxd_announce_event takes shared; see migration
-- 019). It waits for the lock at most @lock_timeout_ms, then fails (SQLSTATE
-- 55P03): the transactions it waits for are single statements and
-- commits, so a long wait means something else holds the lock.
WITH timeout AS (
    SELECT set_config('lock_timeout', CAST(sqlc.arg(lock_timeout_ms)::int AS text), true)
), lock AS (
    SELECT pg_advisory_xact_lock(hashtextextended('outboxd.listeners:' || @organization_id::text, 0)) FROM timeout
)
INSERT INTO event_listeners (organization_id, listener_id, expires_at)
SELECT @organization_id::text, @listener_id, now() + make_interval(secs => @ttl_seconds::float8)
FROM lock
ON CONFLICT (organization_id, listener_id) DO UPDATE SET expires_at = EXCLUDED.expires_at;

-- name: ListenersRenew :exec
-- Extends @listener_id's listening to @organization_ids (re-creating rows
-- that went missing) and drops every listener row that has expired, its
-- own included.
WITH renewed AS (
    INSERT INTO event_listeners (organization_id, listener_id, expires_at)
    SELECT o.id, @listener_id, now() + make_interval(secs => @ttl_seconds::float8)
    FROM unnest(@organization_ids::text[]) AS o (id)
    ON CONFLICT (organization_id, listener_id) DO UPDATE SET expires_at = EXCLUDED.expires_at
)
DELETE FROM event_listeners WHERE expires_at <= now();

-- name: ListenersDrop :exec
-- Ends @listener_id's listening (a process shutting down).
DELETE FROM event_listeners WHERE listener_id = @listener_id;
