-- Purging an organization (outboxd org purge): every table with an
-- organization_id column, and the per-organization rate buckets (scope_key).
-- River's jobs are River's schema, not sqlc's: the store writes those by hand.
-- Each delete takes at most @max_rows rows, so that a large organization is
-- removed in short transactions.

-- name: PurgeCounts :one
SELECT
    (SELECT count(*) FROM action_invocations WHERE organization_id = @organization_id::text)::bigint AS action_invocations,
    (SELECT count(*) FROM invocation_events WHERE organization_id = @organization_id::text)::bigint AS invocation_events,
    (SELECT count(*) FROM slack_messages WHERE organization_id = @organization_id::text)::bigint AS slack_messages,
    (SELECT count(*) FROM invocation_previews WHERE organization_id = @organization_id::text)::bigint AS invocation_previews,
    (SELECT count(*) FROM invocation_approvals WHERE organization_id = @organization_id::text)::bigint AS invocation_approvals,
    (SELECT count(*) FROM invocation_waits w JOIN action_invocations i ON i.id = w.invocation_id
     WHERE i.organization_id = @organization_id::text)::bigint AS invocation_waits,
    (SELECT count(*) FROM grants WHERE organization_id = @organization_id::text)::bigint AS grants,
    (SELECT count(*) FROM webhook_deliveries WHERE organization_id = @organization_id::text)::bigint AS webhook_deliveries,
    (SELECT count(*) FROM webhooks WHERE organization_id = @organization_id::text)::bigint AS webhooks,
    (SELECT count(*) FROM action_modes WHERE organization_id = @organization_id::text)::bigint AS action_modes,
    (SELECT count(*) FROM approval_policies WHERE organization_id = @organization_id::text)::bigint AS approval_policies,
    (SELECT count(*) FROM credentials WHERE organization_id = @organization_id::text)::bigint AS credentials,
    (SELECT count(*) FROM do_not_contact WHERE organization_id = @organization_id::text)::bigint AS do_not_contact,
    (SELECT count(*) FROM event_listeners WHERE organization_id = @organization_id::text)::bigint AS event_listeners,
    (SELECT count(*) FROM invoke_rate_windows WHERE organization_id = @organization_id::text)::bigint AS invoke_rate_windows,
    (SELECT count(*) FROM org_connectors WHERE organization_id = @organization_id::text)::bigint AS org_connectors,
    (SELECT count(*) FROM org_databases WHERE organization_id = @organization_id::text)::bigint AS org_databases,
    (SELECT count(*) FROM org_pauses WHERE organization_id = @organization_id::text)::bigint AS org_pauses,
    (SELECT count(*) FROM quiet_hours WHERE organization_id = @organization_id::text)::bigint AS quiet_hours,
    (SELECT count(*) FROM slack_settings WHERE organization_id = @organization_id::text)::bigint AS slack_settings,
    (SELECT count(*) FROM retention_runs WHERE organization_id = @organization_id::text)::bigint AS retention_runs,
    (SELECT count(*) FROM audit_entries WHERE organization_id = @organization_id::text)::bigint AS audit_entries,
    (SELECT count(*) FROM audit_anchors WHERE organization_id = @organization_id::text)::bigint AS audit_anchors,
    (SELECT count(*) FROM token_revocations WHERE organization_id = @organization_id::text)::bigint AS token_revocations,
    (SELECT count(*) FROM flow_buckets c
     WHERE (c.scope_key = @organization_id::text AND NOT c.name = ANY(@source_buckets::text[]))
        OR (c.name = ANY(@source_buckets::text[])
            AND starts_with(c.scope_key, @organization_id::text || '/')
            AND strpos(substr(c.scope_key, length(@organization_id::text) + 2), '/') = 0)
        OR c.scope_key IN (SELECT w.id::text FROM webhooks w WHERE w.organization_id = @organization_id::text))::bigint AS flow_buckets,
    (SELECT count(*) FROM flow_buckets c, jsonb_each_text(c.lease_orgs) AS l(holder, org)
     WHERE l.org = @organization_id::text)::bigint AS flow_leases;

-- name: PurgeActionInvocations :execrows
DELETE FROM action_invocations d WHERE d.ctid IN (SELECT c.ctid FROM action_invocations c WHERE c.organization_id = @organization_id::text LIMIT @max_rows::int);

-- name: PurgeInvocationEvents :execrows
DELETE FROM invocation_events d WHERE d.ctid IN (SELECT c.ctid FROM invocation_events c WHERE c.organization_id = @organization_id::text LIMIT @max_rows::int);

-- name: PurgeSlackMessages :execrows
DELETE FROM slack_messages d WHERE d.ctid IN (SELECT c.ctid FROM slack_messages c WHERE c.organization_id = @organization_id::text LIMIT @max_rows::int);

-- name: PurgeInvocationPreviews :execrows
DELETE FROM invocation_previews d WHERE d.ctid IN (SELECT c.ctid FROM invocation_previews c WHERE c.organization_id = @organization_id::text LIMIT @max_rows::int);

-- name: PurgeInvocationApprovals :execrows
DELETE FROM invocation_approvals d WHERE d.ctid IN (SELECT c.ctid FROM invocation_approvals c WHERE c.organization_id = @organization_id::text LIMIT @max_rows::int);

-- name: PurgeInvocationWaits :execrows
-- A wait has no organization_id: it is its invocation's (migration 041),
-- and would go with it (ON DELETE CASCADE) uncounted, so it goes first.
DELETE FROM invocation_waits d WHERE d.ctid IN (
    SELECT w.ctid FROM invocation_waits w JOIN action_invocations i ON i.id = w.invocation_id
    WHERE i.organization_id = @organization_id::text
    LIMIT @max_rows::int);

-- name: PurgeGrants :execrows
DELETE FROM grants d WHERE d.ctid IN (SELECT c.ctid FROM grants c WHERE c.organization_id = @organization_id::text LIMIT @max_rows::int);

-- name: PurgeWebhookDeliveries :execrows
DELETE FROM webhook_deliveries d WHERE d.ctid IN (SELECT c.ctid FROM webhook_deliveries c WHERE c.organization_id = @organization_id::text LIMIT @max_rows::int);

-- name: PurgeWebhooks :execrows
DELETE FROM webhooks d WHERE d.ctid IN (SELECT c.ctid FROM webhooks c WHERE c.organization_id = @organization_id::text LIMIT @max_rows::int);

-- name: PurgeActionModes :execrows
DELETE FROM action_modes d WHERE d.ctid IN (SELECT c.ctid FROM action_modes c WHERE c.organization_id = @organization_id::text LIMIT @max_rows::int);

-- name: PurgeApprovalPolicies :execrows
DELETE FROM approval_policies d WHERE d.ctid IN (SELECT c.ctid FROM approval_policies c WHERE c.organization_id = @organization_id::text LIMIT @max_rows::int);

-- name: PurgeCredentials :execrows
DELETE FROM credentials d WHERE d.ctid IN (SELECT c.ctid FROM credentials c WHERE c.organization_id = @organization_id::text LIMIT @max_rows::int);

-- name: PurgeDoNotContact :execrows
DELETE FROM do_not_contact d WHERE d.ctid IN (SELECT c.ctid FROM do_not_contact c WHERE c.organization_id = @organization_id::text LIMIT @max_rows::int);

-- name: PurgeAuditEntries :execrows
DELETE FROM audit_entries d WHERE d.ctid IN (SELECT c.ctid FROM audit_entries c WHERE c.organization_id = @organization_id::text LIMIT @max_rows::int);

-- name: PurgeAuditAnchors :execrows
DELETE FROM audit_anchors d WHERE d.ctid IN (SELECT c.ctid FROM audit_anchors c WHERE c.organization_id = @organization_id::text LIMIT @max_rows::int);

-- name: PurgeTokenRevocations :execrows
DELETE FROM token_revocations d WHERE d.ctid IN (SELECT c.ctid FROM token_revocations c WHERE c.organization_id = @organization_id::text LIMIT @max_rows::int);

-- name: PurgeEventListeners :execrows
DELETE FROM event_listeners d WHERE d.ctid IN (SELECT c.ctid FROM event_listeners c WHERE c.organization_id = @organization_id::text LIMIT @max_rows::int);

-- name: PurgeInvokeRateWindows :execrows
DELETE FROM invoke_rate_windows d WHERE d.ctid IN (SELECT c.ctid FROM invoke_rate_windows c WHERE c.organization_id = @organization_id::text LIMIT @max_rows::int);

-- name: PurgeOrgConnectors :execrows
DELETE FROM org_connectors d WHERE d.ctid IN (SELECT c.ctid FROM org_connectors c WHERE c.organization_id = @organization_id::text LIMIT @max_rows::int);

-- name: PurgeOrgDatabases :execrows
DELETE FROM org_databases d WHERE d.ctid IN (SELECT c.ctid FROM org_databases c WHERE c.organization_id = @organization_id::text LIMIT @max_rows::int);

-- name: PurgeOrgPauses :execrows
DELETE FROM org_pauses d WHERE d.ctid IN (SELECT c.ctid FROM org_pauses c WHERE c.organization_id = @organization_id::text LIMIT @max_rows::int);

-- name: PurgeQuietHours :execrows
DELETE FROM quiet_hours d WHERE d.ctid IN (SELECT c.ctid FROM quiet_hours c WHERE c.organization_id = @organization_id::text LIMIT @max_rows::int);

-- name: PurgeSlackSettings :execrows
DELETE FROM slack_settings d WHERE d.ctid IN (SELECT c.ctid FROM slack_settings c WHERE c.organization_id = @organization_id::text LIMIT @max_rows::int);

-- name: PurgeFlowBuckets :execrows
-- The organization's bucket rows. A scope key alone does not say whose a
-- row is: organization ids may hold a '/', so "acme/x" is organization
-- "acme/x"'s row of a per-organization bucket but source "x" of "acme"'s
-- in a per-source bucket. The bucket's scope does (@source_buckets: the
-- buckets configured per source, keyed "<org>/<source>", where source ids
-- have no '/'): in those, the organization, '/' and one source id; in the
-- others, the organization itself. The webhook bucket's rows are keyed by
-- endpoint id: they go before the endpoints. PurgeCounts counts alike.
DELETE FROM flow_buckets d WHERE d.ctid IN (
    SELECT c.ctid FROM flow_buckets c
    WHERE (c.scope_key = @organization_id::text AND NOT c.name = ANY(@source_buckets::text[]))
       OR (c.name = ANY(@source_buckets::text[])
           AND starts_with(c.scope_key, @organization_id::text || '/')
           AND strpos(substr(c.scope_key, length(@organization_id::text) + 2), '/') = 0)
       OR c.scope_key IN (SELECT w.id::text FROM webhooks w WHERE w.organization_id = @organization_id::text)
    LIMIT @max_rows::int);

-- name: PurgeFlowLeases :one
-- The organization's concurrency leases in the rows of the buckets it
-- shares with others (global buckets), which stay: lease_orgs names the
-- organization of each lease (migration 047), and its leases go with
-- their entries, at most @max_rows rows at a time. Left, they held their
-- slots and counted the purged organization's share of the bucket until
-- they expired. Returns the rows changed and the leases removed (expired
-- ones too: PurgeCounts counts alike). FOR UPDATE takes the rows as the
-- takers (FlowAcquire) leave them.
WITH hit AS (
    SELECT c.name, c.scope_key,
           ARRAY(SELECT l.holder FROM jsonb_each_text(c.lease_orgs) AS l(holder, org)
                 WHERE l.org = @organization_id::text)::text[] AS holders
    FROM flow_buckets c
    WHERE EXISTS (SELECT FROM jsonb_each_text(c.lease_orgs) AS l(holder, org) WHERE l.org = @organization_id::text)
    LIMIT @max_rows::int
    FOR UPDATE
), gone AS (
    UPDATE flow_buckets d
    SET leases = d.leases - hit.holders, lease_orgs = d.lease_orgs - hit.holders
    FROM hit
    WHERE d.name = hit.name AND d.scope_key = hit.scope_key
    RETURNING cardinality(hit.holders) AS leases
)
SELECT count(*)::bigint AS rows, coalesce(sum(gone.leases), 0)::bigint AS leases FROM gone;

-- name: PurgeRetentionRuns :execrows
DELETE FROM retention_runs d WHERE d.ctid IN (SELECT c.ctid FROM retention_runs c WHERE c.organization_id = @organization_id::text LIMIT @max_rows::int);
