package main

import (
	"context"
	"testing"

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
