-- name: FeedList :many
-- The events after a cursor in (xid, id) order with their invocations and
-- their notice kind, limited to kinds. settled is false for an event whose
-- transaction is not yet below the horizon: it and the events after it
-- must wait.
WITH e AS (
    SELECT ev.id, ev.invocation_id, ev.seq, ev.type, ev.from_status, ev.to_status, ev.actor, ev.reason, ev.created_at, ev.xid,
        CASE
            WHEN ev.type = 'created' AND ev.to_status = 'pending' THEN 'action_approval_request'
            WHEN ev.type IN ('approved', 'denied', 'expired') THEN 'action_approval_result'
            WHEN ev.type IN ('completed', 'failed', 'skipped', 'cancelled') THEN 'action_completed'
        END::text AS kind
    FROM invocation_events ev
    WHERE ev.organization_id = @organization_id
      AND (ev.xid, ev.id) > (CAST(@after_xid::text AS xid8), @after_id::bigint)
      AND ((ev.type = 'created' AND ev.to_status = 'pending')
           OR ev.type IN ('approved', 'denied', 'expired', 'completed', 'failed', 'skipped', 'cancelled'))
)
SELECT e.id AS event_id, e.seq, e.type, e.from_status, e.to_status, e.actor, e.reason, e.created_at AS event_created_at,
       e.xid::text::bigint AS xid,
       (e.xid < pg_snapshot_xmin(pg_current_snapshot()))::bool AS settled,
       e.kind,
       sqlc.embed(a)
FROM e JOIN action_invocations a ON a.id = e.invocation_id
WHERE e.kind = ANY(@kinds::text[])
  AND (sqlc.narg(session_id)::text IS NULL OR a.session_id = sqlc.narg(session_id))
ORDER BY e.xid, e.id
LIMIT @max;

-- name: FeedCursor :one
SELECT xid::text::bigint AS xid FROM invocation_events WHERE id = @id AND organization_id = @organization_id;

-- name: FeedHorizon :one
-- Everything below the horizon has ended: a feed that starts now starts
-- here.
SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS horizon;

-- name: FeedListAll :many
-- FeedList across organizations, for the relays: the events that make a
-- notice, of every organization (all_organizations) or of those listed.
WITH e AS (
    SELECT ev.id, ev.invocation_id, ev.seq, ev.type, ev.from_status, ev.to_status, ev.actor, ev.reason, ev.created_at, ev.xid,
        coalesce(CASE
            WHEN ev.type = 'created' AND ev.to_status = 'pending' THEN 'action_approval_request'
            WHEN ev.type IN ('approved', 'denied', 'expired') THEN 'action_approval_result'
            WHEN ev.type IN ('completed', 'failed', 'skipped', 'cancelled') THEN 'action_completed'
        END, '')::text AS kind
    FROM invocation_events ev
    WHERE (ev.xid, ev.id) > (CAST(@after_xid::text AS xid8), @after_id::bigint)
      AND (@all_organizations::bool OR ev.organization_id = ANY(@organizations::text[]))
      AND ((ev.type = 'created' AND ev.to_status = 'pending')
           OR ev.type IN ('approved', 'denied', 'expired', 'completed', 'failed', 'skipped', 'cancelled'))
)
SELECT e.id AS event_id, e.seq, e.type, e.from_status, e.to_status, e.actor, e.reason, e.created_at AS event_created_at,
       e.xid::text::bigint AS xid,
       (e.xid < pg_snapshot_xmin(pg_current_snapshot()))::bool AS settled,
       e.kind,
       sqlc.embed(a)
FROM e JOIN action_invocations a ON a.id = e.invocation_id
WHERE e.kind <> ''
ORDER BY e.xid, e.id
LIMIT @max;
