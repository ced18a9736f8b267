-- name: RelayCursorStart :exec
-- Gives a consumer that has no cursor yet one at the horizon: it relays
-- what becomes visible from now on.
INSERT INTO relay_cursors (consumer, after_xid, after_id)
VALUES (@consumer, pg_snapshot_xmin(pg_current_snapshot()), 0)
ON CONFLICT (consumer) DO NOTHING;

-- name: RelayCursorLock :one
SELECT after_xid::text::bigint AS after_xid, after_id FROM relay_cursors WHERE consumer = @consumer FOR UPDATE;

-- name: RelayCursorAdvance :exec
UPDATE relay_cursors SET after_xid = CAST(@after_xid::text AS xid8), after_id = @after_id WHERE consumer = @consumer;
