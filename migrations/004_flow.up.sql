-- Flow-control token buckets shared by every worker process. One row per
-- bucket and scope key ('' for a global bucket, the organization id for a
-- per-organization one), created full on first use and never deleted.
-- tokens is the level at refilled_at; the level now is computed from the
-- database clock, so processes with skewed clocks agree. A drain (provider
-- 429) sets blocked_until. Concurrency leases live in the row as
-- {"<holder>": "<expires_at>"} so that the statement holding the row lock
-- sees every lease; expired ones are ignored and dropped on the next grant.
-- The table is logged: a database crash must not forget a drain or a lease.
CREATE TABLE flow_buckets (
    name          text             NOT NULL,
    scope_key     text             NOT NULL,
    tokens        double precision NOT NULL,
    refilled_at   timestamptz      NOT NULL,
    blocked_until timestamptz,
    leases        jsonb            NOT NULL DEFAULT '{}',
    PRIMARY KEY (name, scope_key)
);
