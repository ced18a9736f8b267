-- The listings of the console and the API page through an organization's
-- invocations newest first (GET /v1/invocations) and its dead letters
-- (GET /v1/dead-letters) with an offset, and answer how many there are in
-- all. Their indexes now hold what choosing a page and counting need: the
-- order's tie-breaker (id), and for the invocations the columns the
-- listing filters on (status, source, origin, automation). A page is then
-- chosen from index entries alone and only its rows are read (the queries
-- join the page's ids back), and a filtered count reads no rows: with
-- 500,000 invocations in an organization, an offset of 450,000 read
-- 450,000 rows (2.3 s), a count by status or origin every row (300 ms).
-- The indexes replace the old ones: every write already made an entry in
-- each (status changes are never HOT updates, migration 016), and still
-- makes one.
DROP INDEX action_invocations_org_created;
CREATE INDEX action_invocations_org_created ON action_invocations (organization_id, created_at DESC, id)
    INCLUDE (status, integration, origin, automation_id);

DROP INDEX action_invocations_dead_letters;
CREATE INDEX action_invocations_dead_letters ON action_invocations (organization_id, dead_lettered_at DESC, id)
    WHERE dead_lettered_at IS NOT NULL AND discarded_at IS NULL;

-- The enqueue's look-ups by key (a session's idempotency key, an
-- organization's external id) are planned once per connection, and on a
-- new database while the table is empty (dbutil.Keyed): every index that
-- starts with organization_id then costs the same, and Postgres takes the
-- one made last. Made again after the one above, the key indexes stay the
-- ones chosen (dbutil's TestKeyed); otherwise a look-up kept a plan that
-- reads all of the organization's entries of action_invocations_org_created.
DROP INDEX action_invocations_session_idempotency_key;
CREATE UNIQUE INDEX action_invocations_session_idempotency_key
    ON action_invocations (organization_id, session_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
DROP INDEX action_invocations_org_external_id;
CREATE UNIQUE INDEX action_invocations_org_external_id ON action_invocations (organization_id, external_id)
    WHERE external_id IS NOT NULL;
