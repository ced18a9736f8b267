package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/retention"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

// TestOrgPurge_DryRunByDefault: without --yes the command counts and
// changes nothing; with --yes it deletes the organization's rows and no
// other organization's.
func TestOrgPurge_DryRunByDefault(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := pgtest.URL(t)
	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	defer pool.Close()
	for _, org := range []string{"acme", "other"} {
		_, err := pool.Exec(ctx, `
WITH inv AS (
    INSERT INTO action_invocations (organization_id, requested_by, origin, integration, action, risk_level,
        mode, mode_source, params, params_hash, status)
    SELECT $1, 'test', 'invoke', 'demo', 'act', 'low', 'allow', 'default', '{}', 'h', 'completed'
    FROM generate_series(1, 3) RETURNING id
)
INSERT INTO invocation_events (invocation_id, organization_id, seq, type, to_status)
SELECT id, $1, 1, 'created', 'completed' FROM inv`, org)
		require.NoError(t, err)
	}
	rows := func(org string) (n int64) {
		require.NoError(t, pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM action_invocations WHERE organization_id = $1)
            + (SELECT count(*) FROM invocation_events WHERE organization_id = $1)`, org).Scan(&n))
		return n
	}

	env := []string{"DATABASE_URL=" + dbURL, "OUTBOXD_AUTH_JWT_SECRET=", "OUTBOXD_SECRETS_KEY="}
	code, out := run(t, env, "org", "purge", "acme")
	require.Equal(t, 0, code, out)
	require.Regexp(t, `action_invocations\s+3\n`, out)
	require.Contains(t, out, `would delete 6 row(s) of organization "acme"`)
	require.Contains(t, out, "dry run")
	require.EqualValues(t, 6, rows("acme"), "the dry run deleted something")

	code, out = run(t, env, "org", "purge", "acme", "--yes", "--batch", "2")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, `deleted 6 row(s) of organization "acme"`)
	require.Regexp(t, `every token of organization "acme" issued before \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ is refused from now on`, out)
	require.Zero(t, rows("acme"))
	require.EqualValues(t, 6, rows("other"))

	code, out = run(t, env, "org", "purge", "acme", "--yes", "--dry-run")
	require.NotEqual(t, 0, code, out)
}

// TestOrgPurge_HelpNamesEveryTable: the help says what a purge deletes,
// the audit trail included, as the purge goes by.
func TestOrgPurge_HelpNamesEveryTable(t *testing.T) {
	t.Parallel()
	code, out := run(t, nil, "org", "purge", "--help")
	require.Equal(t, 0, code, out)
	for _, table := range retention.PurgeTables() {
		require.Contains(t, out, table)
	}
	require.Contains(t, out, "audit_entries")
}

// TestOrgPurge_BatchOutOfRangeIsRefused: --batch 0 or -5 was taken for
// the default 1000 without a word, and a batch of millions made one
// transaction of a large organization's table; each is refused before
// anything is counted or deleted.
func TestOrgPurge_BatchOutOfRangeIsRefused(t *testing.T) {
	t.Parallel()
	for _, batch := range []string{"0", "-5", "1000000"} {
		code, out := run(t, []string{"DATABASE_URL=postgres://127.0.0.1:1/none"}, "org", "purge", "acme", "--yes", "--batch", batch)
		require.Equal(t, 1, code, out)
		require.Contains(t, out, "--batch "+batch+": it must be between 1 and 100000 rows per delete")
	}
}

// TestOrgPurge_YesDoesNotCountFirst: with --yes the purge counted every
// table before it deleted anything, which on a large organization was a
// long wait for counts nobody asked for; it deletes at once and prints
// each table's line as the table is done. Another session holds the last
// table (org_pauses): the first table's line comes while it does, which a
// count of every table first would have waited for.
func TestOrgPurge_YesDoesNotCountFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := pgtest.URL(t)
	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	defer pool.Close()
	_, err = pool.Exec(ctx, `INSERT INTO river_job (args, kind, max_attempts) VALUES ('{"organization_id": "acme"}', 'expire_invocation', 5)`)
	require.NoError(t, err)
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `LOCK TABLE org_pauses IN ACCESS EXCLUSIVE MODE`)
	require.NoError(t, err)

	env := []string{"DATABASE_URL=" + dbURL, "OUTBOXD_AUTH_JWT_SECRET=", "OUTBOXD_SECRETS_KEY="}
	p := outboxd(t, env, "org", "purge", "acme", "--yes", "--batch", "2")
	require.Eventually(t, func() bool { return strings.Contains(p.output.String(), "river_job") },
		time.Minute, 50*time.Millisecond, "no table was reported while org_pauses was held: %s", p.output.String())
	require.Regexp(t, `TABLE\s+ROWS\nriver_job\s+1\n`, p.output.String())
	require.NoError(t, tx.Rollback(ctx))

	require.NoError(t, p.cmd.Wait(), p.output.String())
	out := p.output.String()
	for _, table := range retention.PurgeTables() {
		require.Regexp(t, `\n`+table+`\s+\d+\n`, out)
	}
	require.Contains(t, out, `deleted 1 row(s) of organization "acme"`)
}

// TestOrgPurge_BucketRowsByTheConfiguredScope: a provider's bucket the
// configuration keeps per source (slack.minute, scope source) has rows
// "<org>/slack", which outlived the purge; the purge reads the scopes from
// the configuration, deletes them, and keeps those of organization
// "acme/x", whose per-organization row of linear.api is "acme/x".
func TestOrgPurge_BucketRowsByTheConfiguredScope(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := pgtest.URL(t)
	pool, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	defer pool.Close()
	_, err = pool.Exec(ctx, `INSERT INTO flow_buckets (name, scope_key, tokens, refilled_at)
		SELECT k.name, k.scope_key, 1, now() FROM (VALUES
			('slack.minute', 'acme/slack'), ('linear.api', 'acme'),
			('slack.minute', 'acme/x/slack'), ('linear.api', 'acme/x')) AS k(name, scope_key)`)
	require.NoError(t, err)
	keys := func() []string {
		rows, err := pool.Query(ctx, `SELECT name || ' ' || scope_key FROM flow_buckets ORDER BY 1`)
		require.NoError(t, err)
		out, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return out
	}

	env := []string{"DATABASE_URL=" + dbURL, "OUTBOXD_AUTH_JWT_SECRET=", "OUTBOXD_SECRETS_KEY=",
		`OUTBOXD_BUCKETS=[{"name": "slack.minute", "rate": 60, "interval": "1m", "burst": 10, "scope": "source"}]`}
	code, out := run(t, env, "org", "purge", "acme")
	require.Equal(t, 0, code, out)
	require.Regexp(t, `flow_buckets\s+2\n`, out)
	code, out = run(t, env, "org", "purge", "acme", "--yes")
	require.Equal(t, 0, code, out)
	require.Regexp(t, `flow_buckets\s+2\n`, out)
	require.Equal(t, []string{"linear.api acme/x", "slack.minute acme/x/slack"}, keys())
}
