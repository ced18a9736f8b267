-- name: SubmitLookup :many
-- The one read before requests of one organization are written, one row
-- per request (n, from 1, in the order of the arrays): whether an earlier
-- request with the same idempotency key in the same session (or, without a
-- key, the same external id in the organization) created an invocation, and the mode overrides for the action: the org
-- default and, when an automation is given, its override; empty strings
-- when unset. Run it in a dbutil.Keyed transaction: a generic plan made
-- on an ordinary connection while the table was small reads every row of
-- the organization.
-- r is materialized so that its columns are plain values to the lookups:
-- under row-level security an array subscript in a lookup's condition
-- is not leakproof, and Postgres would scan the organization's rows
-- instead of using the index. The arrays are read side by side (set-
-- returning functions in one select list run in step): a subscript walks
-- a text array from its start, so reading item n by subscript made a
-- batch's lookup quadratic (8.5 ms of a batch of 1000's, against 1.5 ms).
-- The mode overrides are read once per distinct action (m), not per
-- request: a batch names few actions.
-- An empty key or external id (none given) is never stored: its lookup is
-- skipped by a condition on r alone, and the others compare the columns
-- with r's values as they are. No index serves a comparison with
-- nullif(r.key, ''): planned on statistics of an empty table, each lookup
-- then filtered every invocation of the organization.
WITH r AS MATERIALIZED (
    SELECT generate_series(1, cardinality(@idempotency_keys::text[])) AS n,
        unnest(@idempotency_keys::text[]) AS idempotency_key, unnest(@session_ids::text[]) AS session_id,
        unnest(@external_ids::text[]) AS external_id,
        unnest(@automation_ids::text[]) AS automation_id, unnest(@source_ids::text[]) AS source_id,
        unnest(@action_ids::text[]) AS action_id
), m AS MATERIALIZED (
    SELECT d.automation_id, d.source_id, d.action_id,
        coalesce((SELECT o.mode FROM action_modes o
                  WHERE o.organization_id = @organization_id AND o.scope = 'automation'
                    AND o.scope_id = d.automation_id AND o.source_id = d.source_id AND o.action_id = d.action_id), '') AS automation_mode,
        coalesce((SELECT o.mode FROM action_modes o
                  WHERE o.organization_id = @organization_id AND o.scope = 'org'
                    AND o.scope_id = @organization_id AND o.source_id = d.source_id AND o.action_id = d.action_id), '') AS org_mode
    FROM (SELECT DISTINCT r.automation_id, r.source_id, r.action_id FROM r) AS d
)
SELECT r.n::int AS n,
    coalesce((SELECT true FROM action_invocations i
              WHERE r.idempotency_key <> '' AND i.organization_id = @organization_id
                AND i.session_id = r.session_id AND i.idempotency_key = r.idempotency_key LIMIT 1),
             (SELECT true FROM action_invocations i
              WHERE r.idempotency_key = '' AND r.external_id <> '' AND i.organization_id = @organization_id
                AND i.external_id = r.external_id LIMIT 1), false)::bool AS repeat,
    m.automation_mode::text AS automation_mode,
    m.org_mode::text AS org_mode
FROM r
JOIN m ON m.automation_id = r.automation_id AND m.source_id = r.source_id AND m.action_id = r.action_id
ORDER BY r.n;
