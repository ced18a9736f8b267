-- The pending cap counts a session's pending invocations. Planned on an
-- empty table's statistics, its count could read the index of every
-- pending invocation of every organization (pending_expires) rather than
-- the session's rows: this index holds pending invocations alone, by
-- organization and session, and answers the count by itself. The
-- transitions of an invocation that needs no approval never write it.
CREATE INDEX action_invocations_session_pending ON action_invocations (organization_id, session_id)
    WHERE status = 'pending';
