package retention_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/flow"
	"github.com/outboxd/outboxd/internal/domain/retention"
	"github.com/outboxd/outboxd/internal/domain/revocation"
)

// orgTables lists the tables with an organization_id column, as the
// migrated schema has them.
func orgTables(ctx context.Context, t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(ctx, `
SELECT c.table_name FROM information_schema.columns c
JOIN information_schema.tables t USING (table_schema, table_name)
WHERE c.column_name = 'organization_id' AND c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
ORDER BY 1`)
	require.NoError(t, err)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Greater(t, len(tables), 10, "the schema query found too few tables")
	return tables
}

// TestPurgeTables_CoverTheSchema fails when a migration adds a table with
// an organization_id column that purging leaves out.
func TestPurgeTables_CoverTheSchema(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	covered := retention.PurgeTables()
	for _, table := range orgTables(ctx, t, b.pool) {
		require.Contains(t, covered, table, "table %s has an organization_id column that `outboxd org purge` does not purge: add it to retentionstore.PurgeTables and purge.sql", table)
	}
	require.Contains(t, covered, "river_job")
	require.Contains(t, covered, "flow_buckets")
	for _, table := range []string{"grants", "invocation_approvals", "approval_policies", "invocation_previews", "audit_anchors"} {
		require.Contains(t, covered, table)
	}
	// Rows that cascade from a purged table's (an invocation's, an
	// endpoint's) go before it, or the purge would delete them uncounted,
	// and the dry run would not count them: a table without an
	// organization_id column (invocation_waits) too.
	rows, err := b.pool.Query(ctx, `
SELECT c.conrelid::regclass::text, c.confrelid::regclass::text FROM pg_constraint c
WHERE c.contype = 'f' AND c.confdeltype = 'c' AND c.connamespace = current_schema()::regnamespace
ORDER BY 1, 2`)
	require.NoError(t, err)
	type cascade struct{ Table, From string }
	cascades, err := pgx.CollectRows(rows, pgx.RowToStructByPos[cascade])
	require.NoError(t, err)
	require.NotEmpty(t, cascades)
	for _, c := range cascades {
		if !slices.Contains(covered, c.From) {
			continue
		}
		require.Contains(t, covered, c.Table, "%s cascades from %s, which the purge deletes: purge and count it first", c.Table, c.From)
		require.Less(t, slices.Index(covered, c.Table), slices.Index(covered, c.From), "%s cascades from %s", c.Table, c.From)
	}
}

// populate writes a row for org in every table that holds an
// organization's rows.
func populate(ctx context.Context, t *testing.T, pool *pgxpool.Pool, org string) {
	t.Helper()
	insertInvocations(ctx, t, pool, org, "completed", true, 0, 30)
	insertInvocations(ctx, t, pool, org, "pending", false, 0, 3)
	_, err := pool.Exec(ctx, `
WITH w AS (
    INSERT INTO webhooks (id, organization_id, url, events, secret_sealed)
    VALUES (gen_random_uuid(), $1, 'https://hook.example', '{}', '\x00') RETURNING id
), d AS (
    INSERT INTO webhook_deliveries (id, webhook_id, organization_id, event_id, event_type, payload)
    SELECT gen_random_uuid(), w.id, $1, nextval('invocation_events_id_seq'), 'completed', '{}' FROM w, generate_series(1, 5)
    RETURNING id
), dj AS (
    INSERT INTO river_job (args, kind, max_attempts) SELECT jsonb_build_object('delivery_id', d.id), 'webhook_deliver', 5 FROM d
), sm AS (
    INSERT INTO slack_messages (invocation_id, organization_id, channel, ts)
    SELECT id, $1, 'C1', '1.0' FROM action_invocations WHERE organization_id = $1 AND status = 'pending'
), pv AS (
    INSERT INTO invocation_previews (invocation_id, organization_id, status, note)
    SELECT id, $1, 'failed', 'the test' FROM action_invocations WHERE organization_id = $1 AND status = 'pending'
), ej AS (
    INSERT INTO river_job (args, kind, max_attempts)
    SELECT jsonb_build_object('invocation_id', id, 'organization_id', $1), 'expire_invocation', 5
    FROM action_invocations WHERE organization_id = $1 AND status = 'pending'
), xj AS (
    INSERT INTO river_job (args, kind, max_attempts)
    VALUES (jsonb_build_object('bucket', jsonb_build_object('org', $1)), 'execute_action', 5),
           (jsonb_build_object('invocation_id', (SELECT id FROM action_invocations WHERE organization_id = $1 LIMIT 1)), 'slack_post_approval', 5)
)
SELECT 1`, org)
	require.NoError(t, err)
	for _, sql := range []string{
		`INSERT INTO action_modes (organization_id, scope, scope_id, source_id, action_id, mode, updated_by) VALUES ($1, 'org', $1, 'slack', 'send', 'allow', 'me')`,
		`INSERT INTO credentials (organization_id, integration, sealed, created_by) VALUES ($1, 'slack', '\x00', 'me')`,
		`INSERT INTO do_not_contact (organization_id, pattern, created_by) VALUES ($1, '*@example.com', 'me')`,
		`INSERT INTO event_listeners (organization_id, listener_id, expires_at) VALUES ($1, gen_random_uuid(), now())`,
		`INSERT INTO invoke_rate_windows (organization_id, session_id, window_start, count) VALUES ($1, 's', now(), 1)`,
		`INSERT INTO org_connectors (organization_id, name, url, created_by) VALUES ($1, 'c', 'https://mcp.example', 'me')`,
		`INSERT INTO org_databases (organization_id, name, host, database, statement_timeout_ms, max_rows, created_by) VALUES ($1, 'd', 'h', 'db', 1000, 10, 'me')`,
		`INSERT INTO org_pauses (organization_id, paused_by) VALUES ($1, 'me')`,
		`INSERT INTO quiet_hours (organization_id, time_zone, start_minute, end_minute, updated_by) VALUES ($1, 'UTC', 0, 60, 'me')`,
		`INSERT INTO slack_settings (organization_id, updated_by) VALUES ($1, 'me')`,
		`INSERT INTO retention_runs (organization_id, table_name, last_run_at, last_deleted, deleted_total) VALUES ($1, 'action_invocations', now(), 1, 1)`,
		`INSERT INTO flow_buckets (name, scope_key, tokens, refilled_at) VALUES ('slack', $1, 1, now())`,
		// A concurrency lease in a global bucket, which every organization
		// shares (lease_orgs names each lease's organization).
		leaseSQL,
		`INSERT INTO audit_entries (organization_id, seq, occurred_at, actor_subject, actor_kind, action, target_type, before_state, after_state, prev_hash, hash)
			VALUES ($1, 1, now(), 'me', 'user', 'action_modes.replace', 'action_modes', 'null', '{}', '', 'h')`,
		`INSERT INTO token_revocations (organization_id, session_id, issued_before, revoked_by) VALUES ($1, 's', now(), 'me')`,
		`INSERT INTO audit_anchors (organization_id, pruned_through, prev_hash, pruned_before, pruned_at, pruned_total) VALUES ($1, 1, 'h', now(), now(), 1)`,
		`INSERT INTO invocation_approvals (organization_id, invocation_id, approver) SELECT $1, id, 'me' FROM action_invocations WHERE organization_id = $1 AND status = 'pending'`,
		// MCP calls waiting on a pending invocation (no organization_id:
		// a wait is its invocation's), one of them long over.
		`INSERT INTO invocation_waits (id, invocation_id, until)
			SELECT gen_random_uuid(), id, now() + interval '1 minute' FROM action_invocations WHERE organization_id = $1 AND status = 'pending'
			UNION ALL SELECT gen_random_uuid(), id, now() - interval '1 day' FROM action_invocations WHERE organization_id = $1 AND status = 'pending'`,
		`INSERT INTO approval_policies (organization_id, required, updated_by) VALUES ($1, '{"R4": 2}', 'me')`,
		`INSERT INTO grants (id, organization_id, scope, scope_id, source_id, action_id, granted, remaining, expires_at, definition_hash, created_by, created_from)
			SELECT gen_random_uuid(), $1, 'session', 's', 'slack', 'send', 3, 2, now() + interval '1 hour', 'h', 'me', id
			FROM action_invocations WHERE organization_id = $1 AND status = 'completed' LIMIT 2`,
		// An invocation a grant let through names it.
		`UPDATE action_invocations SET grant_id = (SELECT id FROM grants WHERE organization_id = $1 LIMIT 1)
			WHERE id = (SELECT id FROM action_invocations WHERE organization_id = $1 AND status = 'completed' ORDER BY id DESC LIMIT 1)`,
	} {
		_, err := pool.Exec(ctx, sql, org)
		require.NoError(t, err, sql)
	}
}

// rowsOf counts org's rows in every table with an organization_id column,
// its rate buckets and its River jobs.
func rowsOf(ctx context.Context, t *testing.T, pool *pgxpool.Pool, org string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, table := range orgTables(ctx, t, pool) {
		out[table] = count(ctx, t, pool, `SELECT count(*) FROM `+pgx.Identifier{table}.Sanitize()+` WHERE organization_id = $1`, org)
	}
	out["flow_buckets"] = count(ctx, t, pool, `SELECT count(*) FROM flow_buckets WHERE scope_key = $1`, org)
	out["flow_leases"] = count(ctx, t, pool, `SELECT count(*) FROM flow_buckets, jsonb_each_text(lease_orgs) l WHERE l.value = $1`, org)
	out["invocation_waits"] = count(ctx, t, pool, `SELECT count(*) FROM invocation_waits w
        JOIN action_invocations i ON i.id = w.invocation_id WHERE i.organization_id = $1`, org)
	out["river_job"] = count(ctx, t, pool, `SELECT count(*) FROM river_job WHERE args::text LIKE '%' || $1 || '%'
        OR args->>'invocation_id' IN (SELECT id::text FROM action_invocations WHERE organization_id = $1)
        OR args->>'delivery_id' IN (SELECT id::text FROM webhook_deliveries WHERE organization_id = $1)`, org)
	return out
}

// tablesOf lists the tables of counts.
func tablesOf(counts []retention.PurgeCount) []string {
	out := make([]string, len(counts))
	for i, c := range counts {
		out[i] = c.Table
	}
	return out
}

func TestPurger(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	populate(ctx, t, b.pool, "org-a")
	populate(ctx, t, b.pool, "org-b")
	global := count(ctx, t, b.pool, `SELECT count(*) FROM flow_buckets WHERE scope_key = ''`)
	before := rowsOf(ctx, t, b.pool, "org-a")
	for table, n := range before {
		require.NotZero(t, n, "the test writes no row of org-a in %s", table)
	}
	others := rowsOf(ctx, t, b.pool, "org-b")
	require.Equal(t, before, others)

	// A dry run counts what a purge would delete and changes nothing.
	revocations, err := revocation.New(&revocation.Deps{Pool: b.pool, Owner: b.pool}, &revocation.Config{})
	require.NoError(t, err)
	purger := retention.NewPurger(b.pool, 7, revocations, nil)
	counts, err := purger.Count(ctx, "org-a")
	require.NoError(t, err)
	require.ElementsMatch(t, retention.PurgeTables(), tablesOf(counts), "the dry run counts every table the purge deletes from")
	for table := range before {
		require.Contains(t, tablesOf(counts), table, "the dry run does not count %s", table)
	}
	for _, c := range counts {
		require.Equal(t, before[c.Table], c.Rows, c.Table)
	}
	require.Equal(t, before, rowsOf(ctx, t, b.pool, "org-a"), "the dry run changed something")

	// populate revoked session "s" of each organization.
	issued := jwt.NewNumericDate(time.Now().Add(-time.Hour))
	revoked := &auth.Claims{Org: "org-a", Kind: auth.KindSandbox, SessionID: "s", RegisteredClaims: jwt.RegisteredClaims{IssuedAt: issued}}
	require.NoError(t, revocations.Refresh(ctx))
	require.True(t, revocations.Revoked(revoked))

	deleted, cutoff, err := purger.Purge(ctx, "org-a", nil)
	require.NoError(t, err)
	require.Equal(t, counts, deleted, "the dry run's counts are what the purge deleted")
	for _, c := range deleted {
		require.Equal(t, before[c.Table], c.Rows, c.Table)
	}
	after := rowsOf(ctx, t, b.pool, "org-a")
	for table, n := range after {
		if table == "token_revocations" {
			require.EqualValues(t, 1, n, "the purge's own revocation")
			continue
		}
		require.Zero(t, n, "org-a still has rows in %s", table)
	}
	require.Equal(t, others, rowsOf(ctx, t, b.pool, "org-b"), "the purge touched another organization")
	require.Equal(t, global, count(ctx, t, b.pool, `SELECT count(*) FROM flow_buckets WHERE scope_key = ''`))

	// The session revoked before stays refused, as does every other token
	// of org-a issued until the purge; a token issued after works, and
	// org-b's unrevoked tokens are untouched.
	require.NoError(t, revocations.Refresh(ctx))
	require.True(t, revocations.Revoked(revoked), "a token revoked before the purge works again")
	require.True(t, revocations.Revoked(&auth.Claims{Org: "org-a", Kind: auth.KindService, AutomationID: "a", RegisteredClaims: jwt.RegisteredClaims{IssuedAt: issued}}))
	require.False(t, revocations.Revoked(&auth.Claims{Org: "org-a", Kind: auth.KindSandbox, SessionID: "s", RegisteredClaims: jwt.RegisteredClaims{IssuedAt: jwt.NewNumericDate(cutoff)}}))
	require.False(t, revocations.Revoked(&auth.Claims{Org: "org-b", Kind: auth.KindSandbox, SessionID: "t", RegisteredClaims: jwt.RegisteredClaims{IssuedAt: issued}}))
	listed, err := revocations.List(ctx, "org-a")
	require.NoError(t, err)
	require.Len(t, listed, 1)
	require.Equal(t, retention.PurgedBy, listed[0].RevokedBy)
	require.Nil(t, listed[0].ExpiresAt, "without auth.max_lifetime nothing bounds the tokens it refuses")

	// Purging again finds nothing but that revocation, which it renews.
	deleted, _, err = purger.Purge(ctx, "org-a", nil)
	require.NoError(t, err)
	for _, c := range deleted {
		if c.Table == "token_revocations" {
			require.EqualValues(t, 1, c.Rows)
			continue
		}
		require.Zero(t, c.Rows, c.Table)
	}
	require.NoError(t, revocations.Refresh(ctx))
	require.True(t, revocations.Revoked(revoked))

	_, err = purger.Count(ctx, "")
	require.Error(t, err)
}

// TestPurge_RevocationExpires: with auth.max_lifetime the purge's
// revocation expires as any revocation by issued_before does, once every
// token it refuses has expired (max_lifetime plus leeway after its
// cut-off), instead of staying for ever.
func TestPurge_RevocationExpires(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	const maxLifetime, leeway = 2 * time.Hour, 10 * time.Second
	revocations, err := revocation.New(&revocation.Deps{Pool: b.pool, Owner: b.pool}, &revocation.Config{MaxLifetime: maxLifetime, Leeway: leeway})
	require.NoError(t, err)
	_, cutoff, err := retention.NewPurger(b.pool, 0, revocations, nil).Purge(ctx, "org-a", nil)
	require.NoError(t, err)
	listed, err := revocations.List(ctx, "org-a")
	require.NoError(t, err)
	require.Len(t, listed, 1)
	require.True(t, cutoff.Equal(listed[0].IssuedBefore), "%s, %s", cutoff, listed[0].IssuedBefore)
	require.NotNil(t, listed[0].ExpiresAt)
	require.True(t, cutoff.Add(maxLifetime+leeway).Equal(*listed[0].ExpiresAt), "%s", *listed[0].ExpiresAt)
	// The last token it refuses, issued just before the cut-off for as
	// long as the verifier accepts, is refused by the verifier itself
	// from then on.
	require.NoError(t, revocations.Refresh(ctx))
	last := &auth.Claims{Org: "org-a", Kind: auth.KindService, AutomationID: "a", RegisteredClaims: jwt.RegisteredClaims{
		IssuedAt: jwt.NewNumericDate(cutoff.Add(-time.Second)), ExpiresAt: jwt.NewNumericDate(cutoff.Add(maxLifetime - time.Second))}}
	require.True(t, revocations.Revoked(last))
	require.False(t, last.ExpiresAt.Add(leeway).After(*listed[0].ExpiresAt))
}

// The purge deletes an organization's per-source bucket rows
// ("<org>/<source>") with its per-organization ones, and no row of an
// organization whose id starts with its id and a slash ("acme/x", whose
// per-organization row "acme/x" looks like a source "x" of "acme").
// Before, the per-source rows stayed behind, as did the rows of its
// webhook endpoints' bucket (keyed by endpoint).
func TestPurge_FlowBucketsOfTheOrganizationOnly(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	keys := func(sql string, args ...any) []string {
		rows, err := b.pool.Query(ctx, sql, args...)
		require.NoError(t, err)
		out, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return out
	}
	_, err := b.pool.Exec(ctx, `INSERT INTO flow_buckets (name, scope_key, tokens, refilled_at)
		SELECT k.name, k.scope_key, 1, now() FROM (VALUES
			('slack.minute', 'acme'), ('connector', 'acme/connector:1'), ('database', 'acme/database:2'),
			('slack.minute', 'acme/x'), ('connector', 'acme/x/connector:3'),
			('plugin', '')) AS k(name, scope_key)`)
	require.NoError(t, err)
	// The webhook bucket's rows are keyed by endpoint.
	for org, id := range map[string]string{"acme": "00000000-0000-0000-0000-00000000000a", "acme/x": "00000000-0000-0000-0000-00000000000b"} {
		_, err = b.pool.Exec(ctx, `INSERT INTO webhooks (id, organization_id, url, events, secret_sealed) VALUES ($1, $2, 'https://hook.example', '{}', '\x00')`, id, org)
		require.NoError(t, err)
		_, err = b.pool.Exec(ctx, `INSERT INTO flow_buckets (name, scope_key, tokens, refilled_at) VALUES ('webhook', $1, 1, now())`, id)
		require.NoError(t, err)
	}
	revocations, err := revocation.New(&revocation.Deps{Pool: b.pool, Owner: b.pool}, &revocation.Config{})
	require.NoError(t, err)
	purger := retention.NewPurger(b.pool, 1, revocations, defaultBuckets)

	counts, err := purger.Count(ctx, "acme")
	require.NoError(t, err)
	deleted, _, err := purger.Purge(ctx, "acme", nil)
	require.NoError(t, err)
	for _, c := range slices.Concat(counts, deleted) {
		if c.Table == "flow_buckets" {
			require.EqualValues(t, 4, c.Rows, "acme's three and its endpoint's")
		}
	}
	require.Equal(t, []string{"", "00000000-0000-0000-0000-00000000000b", "acme/x", "acme/x/connector:3"}, keys(`SELECT scope_key FROM flow_buckets ORDER BY scope_key`))

	_, _, err = purger.Purge(ctx, "acme/x", nil)
	require.NoError(t, err)
	require.Equal(t, []string{""}, keys(`SELECT scope_key FROM flow_buckets ORDER BY scope_key`))
}

// leaseSQL gives organization $1 a live concurrency lease in the global
// "plugin" bucket, holder "job-$1", as FlowAcquire records it.
const leaseSQL = `INSERT INTO flow_buckets (name, scope_key, tokens, refilled_at, leases, lease_orgs)
VALUES ('plugin', '', 1, now(), jsonb_build_object('job-' || $1, now() + interval '1 minute'), jsonb_build_object('job-' || $1, $1::text))
ON CONFLICT (name, scope_key) DO UPDATE
SET leases = flow_buckets.leases || EXCLUDED.leases, lease_orgs = flow_buckets.lease_orgs || EXCLUDED.lease_orgs`

// The purge removes the organization's leases from the rows of global
// buckets, which stay: their lease_orgs (migration 047) named it, and its
// leases held their slots, until they expired. The dry run counts them;
// the other organizations' leases, and a lease of no recorded
// organization, stay. Before, the purge left them.
func TestPurge_FlowLeasesInGlobalBuckets(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	for _, org := range []string{"acme", "acme/x", "other"} {
		_, err := b.pool.Exec(ctx, leaseSQL, org)
		require.NoError(t, err)
	}
	// A second lease of acme's, an expired one in another global bucket,
	// and a lease taken before leases named their organization.
	_, err := b.pool.Exec(ctx, `UPDATE flow_buckets SET
		leases = leases || jsonb_build_object('job-acme-2', now() + interval '1 minute', 'job-old', now() + interval '1 minute'),
		lease_orgs = lease_orgs || '{"job-acme-2": "acme"}'
		WHERE name = 'plugin' AND scope_key = ''`)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `INSERT INTO flow_buckets (name, scope_key, tokens, refilled_at, leases, lease_orgs)
		VALUES ('linear.api', '', 3, now(), jsonb_build_object('job-acme-3', now() - interval '1 minute'), '{"job-acme-3": "acme"}')`)
	require.NoError(t, err)
	revocations, err := revocation.New(&revocation.Deps{Pool: b.pool, Owner: b.pool}, &revocation.Config{})
	require.NoError(t, err)
	purger := retention.NewPurger(b.pool, 1, revocations, defaultBuckets)
	leasesOf := func(bucket string) (holders, orgs string) {
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT (SELECT coalesce(string_agg(k, ' ' ORDER BY k), '') FROM jsonb_object_keys(leases) k),
			(SELECT coalesce(string_agg(k || '=' || v, ' ' ORDER BY k), '') FROM jsonb_each_text(lease_orgs) AS e(k, v))
			FROM flow_buckets WHERE name = $1 AND scope_key = ''`, bucket).Scan(&holders, &orgs))
		return holders, orgs
	}

	counts, err := purger.Count(ctx, "acme")
	require.NoError(t, err)
	deleted, _, err := purger.Purge(ctx, "acme", nil)
	require.NoError(t, err)
	for _, c := range slices.Concat(counts, deleted) {
		if c.Table == "flow_leases" {
			require.EqualValues(t, 3, c.Rows, "acme's three leases, the expired one too")
		}
	}
	holders, orgs := leasesOf("plugin")
	require.Equal(t, "job-acme/x job-old job-other", holders)
	require.Equal(t, "job-acme/x=acme/x job-other=other", orgs)
	holders, orgs = leasesOf("linear.api")
	require.Empty(t, holders)
	require.Empty(t, orgs)
	var tokens float64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT tokens FROM flow_buckets WHERE name = 'linear.api'`).Scan(&tokens))
	require.EqualValues(t, 3, tokens, "the bucket's tokens stay")

	counts, err = purger.Count(ctx, "acme")
	require.NoError(t, err)
	for _, c := range counts {
		if c.Table == "flow_leases" {
			require.Zero(t, c.Rows)
		}
	}
}

// defaultBuckets are the scopes of outboxd's default buckets
// (app.DefaultBuckets) that the tests' rows use.
var defaultBuckets = []flow.BucketConfig{
	{Name: "slack.minute", Scope: flow.ScopeOrg},
	{Name: "linear.api", Scope: flow.ScopeOrg},
	{Name: "connector", Scope: flow.ScopeSource},
	{Name: "database", Scope: flow.ScopeSource},
	{Name: "plugin", Scope: flow.ScopeGlobal},
	{Name: "webhook", Scope: flow.ScopeSource},
}

// A provider's bucket the operator keeps per source (slack.minute, scope
// source) has rows "<org>/slack": the purge deletes the organization's,
// which it left before (their source has no ':'), and tells them from
// another organization's by the bucket's scope. In a per-source bucket
// "acme/x" is source "x" of "acme", in a per-organization one it is
// organization "acme/x"'s row.
func TestPurge_FlowBucketsByTheirScope(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	_, err := b.pool.Exec(ctx, `INSERT INTO flow_buckets (name, scope_key, tokens, refilled_at)
		SELECT k.name, k.scope_key, 1, now() FROM (VALUES
			('slack.minute', 'acme/slack'), ('slack.minute', 'acme/x'), ('linear.api', 'acme'),
			('slack.minute', 'acme/x/slack'), ('linear.api', 'acme/x'),
			('slack.minute', 'acmeslack/slack'), ('linear.api', 'acme/slack/linear')) AS k(name, scope_key)`)
	require.NoError(t, err)
	keys := func() (out []string) {
		rows, err := b.pool.Query(ctx, `SELECT name || ' ' || scope_key FROM flow_buckets WHERE scope_key <> '' ORDER BY 1`)
		require.NoError(t, err)
		out, err = pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return out
	}
	revocations, err := revocation.New(&revocation.Deps{Pool: b.pool, Owner: b.pool}, &revocation.Config{})
	require.NoError(t, err)
	// The configuration redefines slack.minute after the defaults.
	buckets := append(slices.Clone(defaultBuckets), flow.BucketConfig{Name: "slack.minute", Scope: flow.ScopeSource})
	purger := retention.NewPurger(b.pool, 2, revocations, buckets)

	counts, err := purger.Count(ctx, "acme")
	require.NoError(t, err)
	deleted, _, err := purger.Purge(ctx, "acme", nil)
	require.NoError(t, err)
	for _, c := range slices.Concat(counts, deleted) {
		if c.Table == "flow_buckets" {
			require.EqualValues(t, 3, c.Rows, "acme's sources slack and x, and its linear.api row")
		}
	}
	require.Equal(t, []string{"linear.api acme/slack/linear", "linear.api acme/x", "slack.minute acme/x/slack", "slack.minute acmeslack/slack"}, keys())

	_, _, err = purger.Purge(ctx, "acme/x", nil)
	require.NoError(t, err)
	require.Equal(t, []string{"linear.api acme/slack/linear", "slack.minute acmeslack/slack"}, keys())
}

// The purge reads River's jobs a batch at a time in order of id: it
// deletes every job of the organization wherever its id falls among
// other organizations' jobs and jobs of no organization (a relay's),
// whichever way the job names it, and none of theirs.
func TestPurge_RiverJobsOfTheOrganizationOnly(t *testing.T) {
	t.Parallel()
	ctx, b := setup(t)
	for _, org := range []string{"org-a", "org-b"} {
		insertInvocations(ctx, t, b.pool, org, "completed", true, 0, 20)
		_, err := b.pool.Exec(ctx, `
INSERT INTO webhooks (id, organization_id, url, events, secret_sealed) VALUES (gen_random_uuid(), $1, 'https://hook.example', '{}', '\x00');
`, org)
		require.NoError(t, err)
		_, err = b.pool.Exec(ctx, `
INSERT INTO webhook_deliveries (id, webhook_id, organization_id, event_id, event_type, payload)
SELECT gen_random_uuid(), w.id, $1, nextval('invocation_events_id_seq'), 'completed', '{}'
FROM webhooks w, generate_series(1, 20) WHERE w.organization_id = $1`, org)
		require.NoError(t, err)
	}
	// Jobs of both organizations, of every kind, and of none, interleaved.
	_, err := b.pool.Exec(ctx, `
WITH inv AS (
    SELECT organization_id AS org, id, row_number() OVER (PARTITION BY organization_id ORDER BY id) AS n FROM action_invocations
), del AS (
    SELECT organization_id AS org, id, row_number() OVER (PARTITION BY organization_id ORDER BY id) AS n FROM webhook_deliveries
)
INSERT INTO river_job (args, kind, max_attempts)
SELECT args, kind, 5 FROM (
    SELECT inv.n, 1 AS k, inv.org, jsonb_build_object('invocation_id', inv.id) AS args, 'slack_post_approval' AS kind FROM inv
    UNION ALL SELECT inv.n, 2, inv.org, jsonb_build_object('invocation_id', inv.id, 'organization_id', inv.org), 'expire_invocation' FROM inv
    UNION ALL SELECT inv.n, 3, inv.org, jsonb_build_object('invocation_id', inv.id, 'bucket', jsonb_build_object('name', 'slack.minute', 'org', inv.org)), 'execute_action' FROM inv
    UNION ALL SELECT del.n, 4, del.org, jsonb_build_object('delivery_id', del.id), 'webhook_deliver' FROM del
    UNION ALL SELECT n, 5, '', '{}', 'relay' FROM generate_series(1, 20) n
) j ORDER BY n, k, org`)
	require.NoError(t, err)
	jobs := func(org string) int64 {
		return count(ctx, t, b.pool, `SELECT count(*) FROM river_job WHERE args->>'organization_id' = $1 OR args->'bucket'->>'org' = $1
            OR args->>'invocation_id' IN (SELECT id::text FROM action_invocations WHERE organization_id = $1)
            OR args->>'delivery_id' IN (SELECT id::text FROM webhook_deliveries WHERE organization_id = $1)`, org)
	}
	require.EqualValues(t, 80, jobs("org-a"))
	require.EqualValues(t, 80, jobs("org-b"))
	total := count(ctx, t, b.pool, `SELECT count(*) FROM river_job`)
	require.EqualValues(t, 180, total)

	revocations, err := revocation.New(&revocation.Deps{Pool: b.pool, Owner: b.pool}, &revocation.Config{})
	require.NoError(t, err)
	purger := retention.NewPurger(b.pool, 3, revocations, nil)
	counts, err := purger.Count(ctx, "org-a")
	require.NoError(t, err)
	require.Equal(t, retention.PurgeCount{Table: "river_job", Rows: 80}, counts[0])
	var told []retention.PurgeCount
	deleted, _, err := purger.Purge(ctx, "org-a", func(c retention.PurgeCount) { told = append(told, c) })
	require.NoError(t, err)
	require.Equal(t, retention.PurgeCount{Table: "river_job", Rows: 80}, deleted[0])
	require.Equal(t, deleted, told, "each table is told as it is done")
	require.Zero(t, jobs("org-a"))
	require.EqualValues(t, 80, jobs("org-b"))
	require.EqualValues(t, 100, count(ctx, t, b.pool, `SELECT count(*) FROM river_job`), "org-b's and the relay's")
}
