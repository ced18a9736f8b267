package dbutil_test

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/platform/dbsqlc"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// emptyTenants returns a test database whose action_invocations is empty
// and analyzed so (the statistics a plan made now is made on), and a
// tenant pool of one connection on it, so that every run of a statement is
// on the connection that prepared it.
func emptyTenants(t *testing.T) (admin, tenants *pgxpool.Pool) {
	t.Helper()
	ctx := context.Background()
	admin = pgtest.Pool(t)
	_, err := admin.Exec(ctx, "ANALYZE action_invocations")
	require.NoError(t, err)
	cfg := admin.Config().Copy()
	cfg.MaxConns = 1
	tenants, err = dbutil.TenantPool(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(tenants.Close)
	return admin, tenants
}

// keptInKeyed is the plan the tenant connection keeps for the sqlc query
// name, explained with args in a Keyed transaction (as the statement's
// own transactions see it), after seven runs, all with its generic plan.
func keptInKeyed(t *testing.T, octx context.Context, tenants *pgxpool.Pool, name, args string) pgtest.KeptPlan {
	t.Helper()
	tx, err := dbutil.Keyed{Pool: tenants}.Begin(octx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.Background()) }()
	kept := pgtest.Kept(t, tx, name, args)
	require.Zero(t, kept.Custom, name)
	require.Equal(t, int64(7), kept.Generic, name)
	return kept
}

// TestKeyed: the enqueue's lookup, run in Keyed transactions on a tenant
// connection, is planned once, on an empty table whose statistics say so,
// and the plan it keeps still reaches the organization's invocations by
// index once there are thousands of them. In ordinary transactions the
// first five runs are planned each (custom plans), and the test fails; so
// it does when a lookup compares with nullif of the key and the empty
// string, which no index serves: on such statistics the plan then filters
// every invocation of the organization.
func TestKeyed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin, tenants := emptyTenants(t)

	const org = "org-keyed"
	octx := dbutil.WithOrg(ctx, org)
	lookup := func() {
		t.Helper()
		require.NoError(t, dbutil.WithTx(octx, dbutil.Keyed{Pool: tenants}, func(ctx context.Context, tx pgx.Tx) error {
			found, err := dbsqlc.New().SubmitLookup(ctx, tx, dbsqlc.SubmitLookupParams{
				OrganizationID:  org,
				IdempotencyKeys: []string{"key-1", ""},
				SessionIds:      []string{"session-1", ""},
				ExternalIds:     []string{"", "ext-1"},
				AutomationIds:   []string{"", ""},
				SourceIds:       []string{"slack", "slack"},
				ActionIds:       []string{"send_message", "send_message"},
			})
			require.Len(t, found, 2)
			return err
		}))
	}
	lookup() // planned on an empty table
	_, err := admin.Exec(ctx, `
		INSERT INTO action_invocations (organization_id, requested_by, origin, integration, action, risk_level,
			mode, mode_source, params, params_hash, status, session_id, idempotency_key, external_id)
		SELECT $1, 'agent', 'invoke', 'slack', 'send_message', 'write', 'allow', 'default', '{}', 'h', 'completed',
			'session-' || n % 50, 'key-' || n, 'ext-' || n
		FROM generate_series(1, 5000) AS n`, org)
	require.NoError(t, err)
	for range 6 {
		lookup()
	}

	// The plan kept, as the lookups' transactions see it.
	kept := keptInKeyed(t, octx, tenants, "SubmitLookup", `('`+org+`', '{key-1,""}', '{session-1,""}', '{"",ext-1}', '{"",""}', '{slack,slack}', '{send_message,send_message}')`)
	require.Contains(t, kept.Explain, "action_invocations_session_idempotency_key")
	require.Contains(t, kept.Explain, "action_invocations_org_external_id")
	require.NotContains(t, kept.Explain, "Seq Scan")
}

// TestKeyed_PendingCap: the pending cap's count, run in Keyed transactions
// as the enqueue runs it, planned on an empty table's statistics, keeps a
// plan that reads the session's pending invocations by index once
// thousands of other sessions' and organizations' are pending: not the
// index of every pending invocation, which such statistics made look as
// cheap.
func TestKeyed_PendingCap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin, tenants := emptyTenants(t)

	const org = "org-pending"
	octx := dbutil.WithOrg(ctx, org)
	count := func() int64 {
		t.Helper()
		var n int64
		require.NoError(t, dbutil.WithTx(octx, dbutil.Keyed{Pool: tenants}, func(ctx context.Context, tx pgx.Tx) error {
			var err error
			session := "session-1"
			n, err = dbsqlc.New().InvocationCountPending(ctx, tx, dbsqlc.InvocationCountPendingParams{OrganizationID: org, SessionID: &session})
			return err
		}))
		return n
	}
	require.Zero(t, count()) // planned on an empty table
	_, err := admin.Exec(ctx, `
		INSERT INTO action_invocations (organization_id, requested_by, origin, integration, action, risk_level,
			mode, mode_source, params, params_hash, status, session_id)
		SELECT CASE WHEN n % 10 = 0 THEN $1 ELSE 'org-other' END, 'agent', 'invoke', 'slack', 'send_message', 'write',
			'require_approval', 'default', '{}', 'h', CASE WHEN n % 3 = 0 THEN 'completed' ELSE 'pending' END,
			'session-' || n % 7
		FROM generate_series(1, 5000) AS n`, org)
	require.NoError(t, err)
	var want int64
	require.NoError(t, admin.QueryRow(ctx, `SELECT count(*) FROM action_invocations
		WHERE organization_id = $1 AND session_id = 'session-1' AND status = 'pending'`, org).Scan(&want))
	require.NotZero(t, want)
	for range 6 {
		require.Equal(t, want, count())
	}

	kept := keptInKeyed(t, octx, tenants, "InvocationCountPending", `('`+org+`', 'session-1')`)
	require.Contains(t, kept.Explain, "action_invocations_session_pending")
	require.Contains(t, kept.Explain, "Index Cond: ((organization_id = $1) AND (session_id = $2))")
}
