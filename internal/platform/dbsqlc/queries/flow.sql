-- name: FlowBucketCreate :exec
-- Creates a bucket row full. A row created meanwhile by another process is
-- left as it is.
INSERT INTO flow_buckets (name, scope_key, tokens, refilled_at)
VALUES (@name, @scope_key, @burst::float8, now())
ON CONFLICT (name, scope_key) DO NOTHING;

-- name: FlowAcquire :one
-- Takes one token for each of holders, in order, while tokens last, and
-- with a positive max_concurrency a lease for each while slots last;
-- granted_each says which of holders got theirs. The holders refused get
-- nothing. No row means the bucket row does not exist
-- yet (FlowBucketCreate). A process asks for all the jobs that want the
-- bucket at the same moment in one statement, so the row is locked once
-- for them.
--
-- cur locks the row, serializing takers across processes. FOR UPDATE returns
-- the latest committed version of the row even after waiting for the lock,
-- and the leases are part of that row, so one statement sees a consistent
-- state without an explicit transaction. now() is the statement's start,
-- which can precede the lock by the wait for it: refilled_at never moves
-- backwards and a negative elapsed time counts as zero, so a waiter credits
-- no time twice and the refill at worst lags by the lock wait.
--
-- Leases of holders that are not asking count against max_concurrency; a
-- holder asking again (a retried job) replaces its own lease.
--
-- With a positive org_share, orgs[i] is the organization of holders[i]
-- and one organization holds at most org_share leases: a holder whose
-- organization would go over it is refused (over_share) before tokens and
-- slots are counted, so it takes nothing and leaves its place to the next
-- holder. lease_orgs records the organization of each lease (none for
-- an empty one); entries go with their leases.
--
-- token_wait_seconds is how long until the next token after the granted
-- ones is free (0 when one is): the later of the end of a drain and one
-- token's refill.
--
-- The statement commits asynchronously (synchronous_commit off for its
-- own implicit transaction): the row lock that serializes every taker of
-- the bucket is then held for the statement, not also for a WAL flush. A
-- crash may forget the last few milliseconds of grants, which can only
-- hand out those tokens once more.
WITH async AS (
    SELECT set_config('synchronous_commit', 'off', true)
), cur AS (
    SELECT b.tokens, b.refilled_at, b.blocked_until, b.leases, b.lease_orgs
    FROM flow_buckets b
    WHERE b.name = @name AND b.scope_key = @scope_key
    FOR UPDATE
), live AS (
    SELECT l.key AS holder, l.value AS expires_at, cur.lease_orgs ->> l.key AS org,
           l.key = ANY(@holders::text[]) AS asking
    FROM cur, jsonb_each(cur.leases) AS l(key, value)
    WHERE (l.value #>> '{}')::timestamptz > now()
), state AS (
    SELECT
        least(@burst::float8,
              cur.tokens + greatest(0, extract(epoch FROM now() - cur.refilled_at))::float8 * @per_second::float8) AS available,
        greatest(cur.refilled_at, now()) AS refilled_at,
        greatest(0, coalesce(extract(epoch FROM cur.blocked_until - now()), 0))::float8 AS blocked_seconds,
        (SELECT coalesce(jsonb_object_agg(live.holder, live.expires_at), '{}'::jsonb) FROM live) AS leases,
        (SELECT coalesce(jsonb_object_agg(live.holder, live.org) FILTER (WHERE live.org IS NOT NULL), '{}'::jsonb) FROM live) AS lease_orgs,
        (SELECT count(*) FROM live WHERE NOT live.asking)::int AS others
    FROM cur
), decision AS (
    -- room is how many of the holders within their share may be granted.
    SELECT state.*,
           (CASE WHEN state.blocked_seconds > 0 THEN 0
                ELSE greatest(0, least(floor(state.available)::int,
                                       CASE WHEN @max_concurrency::int > 0
                                            THEN sqlc.arg(max_concurrency)::int - state.others
                                            ELSE cardinality(@holders::text[]) END))
            END)::int AS room
    FROM state
), asks AS (
    SELECT h.n, h.holder, h.org,
           (sqlc.arg(org_share)::int <= 0 OR h.org = ''
            OR row_number() OVER (PARTITION BY h.org ORDER BY h.n)
               + (SELECT count(*) FROM live WHERE NOT live.asking AND live.org = h.org) <= sqlc.arg(org_share)::int) AS within_share
    FROM (SELECT u.n, u.holder, coalesce((@orgs::text[])[u.n], '') AS org
          FROM unnest(@holders::text[]) WITH ORDINALITY AS u(holder, n)) h
), outcome AS (
    SELECT asks.*,
           asks.within_share
           AND count(*) FILTER (WHERE asks.within_share) OVER (ORDER BY asks.n) <= decision.room AS granted
    FROM asks, decision
), totals AS (
    SELECT (count(*) FILTER (WHERE outcome.granted))::int AS granted,
           array_agg(outcome.granted ORDER BY outcome.n)::bool[] AS granted_each,
           array_agg(NOT outcome.within_share ORDER BY outcome.n)::bool[] AS over_share,
           jsonb_object_agg(outcome.holder, now() + make_interval(secs => @lease_ttl_seconds::float8))
               FILTER (WHERE outcome.granted) AS new_leases,
           coalesce(jsonb_object_agg(outcome.holder, outcome.org) FILTER (WHERE outcome.granted AND outcome.org <> ''), '{}'::jsonb) AS new_orgs,
           array_agg(outcome.holder) FILTER (WHERE outcome.granted) AS granted_holders
    FROM outcome
), take AS (
    UPDATE flow_buckets b
    SET tokens = d.available - t.granted,
        refilled_at = d.refilled_at,
        leases = CASE WHEN @max_concurrency::int > 0 THEN d.leases || t.new_leases ELSE b.leases END,
        lease_orgs = CASE WHEN @max_concurrency::int > 0 THEN (d.lease_orgs - t.granted_holders) || t.new_orgs ELSE b.lease_orgs END
    FROM decision d, totals t
    WHERE b.name = @name AND b.scope_key = @scope_key AND t.granted > 0
)
SELECT totals.granted_each::bool[] AS granted_each,
       totals.over_share::bool[] AS over_share,
       greatest(0, decision.blocked_seconds,
                (1 - (decision.available - totals.granted)) / @per_second::float8)::float8 AS token_wait_seconds
FROM decision, totals, async;

-- name: FlowRelease :exec
-- Frees holder's lease. Releasing a lease that expired or was released
-- already changes nothing.
UPDATE flow_buckets
SET leases = leases - @holder::text,
    lease_orgs = lease_orgs - @holder::text
WHERE name = @name AND scope_key = @scope_key AND leases ? @holder::text;

-- name: FlowRefund :exec
-- Gives back the token of a call that was not made (a gate held or
-- skipped the job after it took the token), up to burst. The stored level
-- refills from refilled_at as before, which comes to the same as adding
-- the token to the refilled level and capping that at burst. A row that
-- does not exist changes nothing.
UPDATE flow_buckets
SET tokens = least(@burst::float8, tokens + 1)
WHERE name = @name AND scope_key = @scope_key;

-- name: FlowDrain :exec
-- Empties the bucket and blocks it until now + seconds; a block that ends
-- later stays.
INSERT INTO flow_buckets (name, scope_key, tokens, refilled_at, blocked_until)
VALUES (@name, @scope_key, 0, now(), now() + make_interval(secs => @seconds::float8))
ON CONFLICT (name, scope_key) DO UPDATE
SET tokens = 0,
    refilled_at = greatest(flow_buckets.refilled_at, EXCLUDED.refilled_at),
    blocked_until = greatest(flow_buckets.blocked_until, EXCLUDED.blocked_until);

-- name: FlowStates :many
-- The bucket rows an organization's calls use: global rows (empty scope key),
-- its own (@org) and its sources' (@org/<source>), with the number of live
-- leases and the database clock, from which the caller brings the stored
-- level up to date.
SELECT b.name, b.scope_key, b.tokens, b.refilled_at, b.blocked_until,
       (SELECT count(*) FROM jsonb_each(b.leases) l WHERE (l.value #>> '{}')::timestamptz > now())::int AS active_leases,
       now()::timestamptz AS read_at
FROM flow_buckets b
WHERE b.scope_key = '' OR b.scope_key = @org::text OR starts_with(b.scope_key, @org::text || '/')
ORDER BY b.name, b.scope_key;
