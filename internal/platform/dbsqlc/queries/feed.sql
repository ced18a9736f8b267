-- name: FeedList :many
-- The events after a cursor in (xid, id) order with their invocations and
-- their notice kind, limited to kinds. settled is false for an event whose
-- transaction is not yet below the horizon: it and the events after it
-- must wait (feed_horizon, migration 050: read once, as a scalar
-- subquery, and only for an event the snapshot's xmin does not settle).
-- "notice IS NOT NULL" is the predicate of the feed indexes (migration
-- 024), there for the planner.
SELECT e.id AS event_id, e.seq, e.type, e.from_status, e.to_status, e.actor, e.reason, e.created_at AS event_created_at,
       e.xid::text::bigint AS xid,
       (e.xid < pg_snapshot_xmin(pg_current_snapshot()) OR e.xid < (SELECT feed_horizon()))::bool AS settled,
       e.notice::text AS kind,
       sqlc.embed(a)
FROM invocation_events e JOIN action_invocations a ON a.id = e.invocation_id
WHERE e.organization_id = @organization_id
  AND (e.xid, e.id) > (CAST(@after_xid::text AS xid8), @after_id::bigint)
  AND e.notice IS NOT NULL
  AND e.notice = ANY(@kinds::text[])
  AND (sqlc.narg(session_id)::text IS NULL OR a.session_id = sqlc.narg(session_id))
ORDER BY e.xid, e.id
LIMIT @max;

-- name: FeedCursor :one
SELECT xid::text::bigint AS xid FROM invocation_events WHERE id = @id AND organization_id = @organization_id;

-- name: FeedHorizon :one
-- Every transaction below the horizon that could write events has ended
-- (migration 050): a feed that starts now starts here.
SELECT feed_horizon()::text::bigint AS horizon;

-- name: FeedListAll :many
-- FeedList across organizations, for the relays: the events that make a
-- notice, of every organization (all_organizations) or of those listed.
SELECT e.id AS event_id, e.seq, e.type, e.from_status, e.to_status, e.actor, e.reason, e.created_at AS event_created_at,
       e.xid::text::bigint AS xid,
       (e.xid < pg_snapshot_xmin(pg_current_snapshot()) OR e.xid < (SELECT feed_horizon()))::bool AS settled,
       e.notice::text AS kind,
       sqlc.embed(a)
FROM invocation_events e JOIN action_invocations a ON a.id = e.invocation_id
WHERE (e.xid, e.id) > (CAST(@after_xid::text AS xid8), @after_id::bigint)
  AND (@all_organizations::bool OR e.organization_id = ANY(@organizations::text[]))
  AND e.notice IS NOT NULL
ORDER BY e.xid, e.id
LIMIT @max;
