-- An organization's pause: while its row exists the workers hold the
-- organization's execute jobs (snoozed, no attempt spent, no call made)
-- instead of running them; every other organization's jobs run as before.
-- Resuming deletes the row and brings the held jobs forward (their River
-- metadata names the pause that held them: {"org_paused_at": paused_at}).
-- Pausing the shared River queue is the operator's (`outboxd queue`).
CREATE TABLE org_pauses (
    organization_id text        PRIMARY KEY,
    paused_by       text        NOT NULL,
    paused_at       timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE org_pauses ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON org_pauses
    USING (organization_id = current_setting('outboxd.org', true));

-- The API role writes and reads River job rows (an invocation's jobs go in
-- with it; approving, cancelling and resuming change them): a session sees
-- the jobs of its organization only. A job's organization is in its args
-- (execute jobs: bucket.org; expire jobs: organization_id); jobs enqueued
-- before they carried it belong to the organization of their invocation,
-- which action_invocations' own policy limits to the session's. Jobs of no
-- organization (relays, sweeps) are the workers' and nobody else's.
ALTER TABLE river_job ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON river_job
    USING (coalesce(args->'bucket'->>'org', args->>'organization_id') = current_setting('outboxd.org', true)
        OR EXISTS (SELECT FROM action_invocations i WHERE i.id = (args->>'invocation_id')::uuid));

-- The listeners of an organization (migration 019) are read by the
-- announcing trigger under the role that wrote the event, which for the API
-- is the event's own organization; the waiter that registers listeners for
-- every organization works through the owner's pool.
ALTER TABLE event_listeners ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant ON event_listeners
    USING (organization_id = current_setting('outboxd.org', true));

-- Rate buckets are the workers' (the flow limiter works through the
-- owner's pool for every organization): a global bucket's row is shared by
-- all organizations and a scope key does not say which kind it is, so the
-- API role gets no access at all rather than a policy.
DO $$
BEGIN
    EXECUTE format('REVOKE ALL ON %I.flow_buckets FROM outboxd_tenant', current_schema());
END
$$;
