-- Every transition of an invocation changes its status, so Postgres writes
-- a new entry in every index of action_invocations that the new row
-- belongs to (an update of an indexed column is never HOT), and every
-- transition appends an event with an entry in each index of
-- invocation_events. Partial indexes hold only the rows their readers look
-- for, so the hot path (created, started, completed, no session) skips
-- them.

-- The pending cap counts a session's pending invocations; invocations
-- outside a session (envelopes) never enter this index.
DROP INDEX action_invocations_session_status;
CREATE INDEX action_invocations_session_status ON action_invocations (session_id, status)
    WHERE session_id IS NOT NULL;

-- The expiry sweep reads pending invocations by expiry, and the operations
-- page counts what is not yet finished by status: each its own index, of
-- only those rows.
DROP INDEX action_invocations_status_expires;
CREATE INDEX action_invocations_pending_expires ON action_invocations (expires_at)
    WHERE status = 'pending';
CREATE INDEX action_invocations_org_in_flight ON action_invocations (organization_id, status)
    WHERE status IN ('pending', 'approved', 'executing');

-- Feeds read events by (xid, id), per organization or all: the
-- (organization_id, id) index has no reader left.
DROP INDEX invocation_events_org_id;
