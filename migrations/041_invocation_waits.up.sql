-- The MCP calls that wait on an invocation they did not create (a retry
-- with the same idempotency key, outboxd_wait), in any API process: one
-- row per waiting call, written before it waits and deleted when it ends.
-- The call that created the invocation, when its client cancels it,
-- withdraws it only when no row is left (outbox.Service.Withdraw), so a
-- retry waiting in another process still gets the one execution's result.
-- A process that dies leaves its rows: they only keep the invocation from
-- being withdrawn (it stays pending until decided, cancelled or expired),
-- and go with it (ON DELETE CASCADE).
--
-- No organization_id: a row is its invocation's, which the policy reads
-- under the invocation's own policy, and which the purge deletes it with.
CREATE TABLE invocation_waits (
    id            uuid        PRIMARY KEY,
    invocation_id uuid        NOT NULL REFERENCES action_invocations (id) ON DELETE CASCADE,
    started_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX invocation_waits_invocation ON invocation_waits (invocation_id);

ALTER TABLE invocation_waits ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON invocation_waits
    USING (EXISTS (SELECT 1 FROM action_invocations i WHERE i.id = invocation_id));
