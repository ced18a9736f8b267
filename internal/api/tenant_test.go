package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
)

// TestTenant_QueriesWithoutOrgFilterSeeOneOrg issues, on purpose, queries
// that forget their organization filter through the API's pool: the
// database shows each organization only its own rows (invocations, events,
// credentials, River's jobs, listeners, pauses), and a context without an
// organization nothing at all; the rate buckets it cannot read at all. The
// owner's pool (the workers') sees all.
func TestTenant_QueriesWithoutOrgFilterSeeOneOrg(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-org-1")
	b.Invoke("send_message", message)
	owner2 := b.Token(auth.Claims{Org: "org-2", Kind: auth.KindUser, Role: auth.RoleOwner})
	require.Equal(t, http.StatusOK, b.Do("PUT", "/v1/credentials/slack", owner2, map[string]string{"token": "xoxb-org-2"}).Status)
	sandbox2 := b.Token(auth.Claims{Org: "org-2", Kind: auth.KindSandbox, SessionID: apptest.Session})
	for range 2 {
		r := b.Do("POST", "/v1/sessions/"+apptest.Session+"/actions/invoke", sandbox2, map[string]any{"integration": "slack", "action": "send_message", "params": message})
		require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	}

	tenant, err := dbutil.TenantPool(ctx, b.Pool.Config())
	require.NoError(t, err)
	defer tenant.Close()
	for _, tc := range []struct {
		table      string
		org1, org2 int
		total      int
	}{
		{"action_invocations", 1, 2, 3},
		{"invocation_events", 1, 2, 3},
		{"credentials", 1, 1, 2},
	} {
		var n int
		require.NoError(t, tenant.QueryRow(dbutil.WithOrg(ctx, "org-1"), "SELECT count(*) FROM "+tc.table).Scan(&n))
		require.Equal(t, tc.org1, n, tc.table)
		require.NoError(t, tenant.QueryRow(dbutil.WithOrg(ctx, "org-2"), "SELECT count(*) FROM "+tc.table).Scan(&n))
		require.Equal(t, tc.org2, n, tc.table)
		require.NoError(t, tenant.QueryRow(ctx, "SELECT count(*) FROM "+tc.table).Scan(&n))
		require.Zero(t, n, "%s without an organization", tc.table)
		require.NoError(t, b.Pool.QueryRow(ctx, "SELECT count(*) FROM "+tc.table).Scan(&n))
		require.Equal(t, tc.total, n, tc.table)
	}

	// River's jobs: each organization's session sees the jobs of its own
	// invocations (execute and expiry), none of another's and none of the
	// workers' own (relays, sweeps).
	jobsOf := func(org string) int {
		var n int
		require.NoError(t, b.Pool.QueryRow(ctx, `SELECT count(*) FROM river_job
			WHERE coalesce(args->'bucket'->>'org', args->>'organization_id') = $1
			   OR (args->>'invocation_id')::uuid IN (SELECT id FROM action_invocations WHERE organization_id = $1)`, org).Scan(&n))
		return n
	}
	org1Jobs, org2Jobs := jobsOf("org-1"), jobsOf("org-2")
	require.Positive(t, org1Jobs)
	require.Positive(t, org2Jobs)
	for org, want := range map[string]int{"org-1": org1Jobs, "org-2": org2Jobs, "": 0} {
		var n int
		require.NoError(t, tenant.QueryRow(dbutil.WithOrg(ctx, org), "SELECT count(*) FROM river_job").Scan(&n))
		require.Equal(t, want, n, "river_job as %q", org)
	}
	tag, err := tenant.Exec(dbutil.WithOrg(ctx, "org-1"), `UPDATE river_job SET scheduled_at = now() + interval '1 day'
		WHERE coalesce(args->'bucket'->>'org', args->>'organization_id') = 'org-2'`)
	require.NoError(t, err)
	require.Zero(t, tag.RowsAffected(), "org-1 cannot touch org-2's jobs")

	// Listeners and pauses: one row of each organization, and each session
	// sees its own.
	for _, org := range []string{"org-1", "org-2"} {
		_, err := b.Pool.Exec(ctx, `INSERT INTO event_listeners (organization_id, listener_id, expires_at) VALUES ($1, gen_random_uuid(), now() + interval '1 hour')`, org)
		require.NoError(t, err)
		_, err = b.Pool.Exec(ctx, `INSERT INTO org_pauses (organization_id, paused_by) VALUES ($1, 'test')`, org)
		require.NoError(t, err)
	}
	for _, table := range []string{"event_listeners", "org_pauses"} {
		var n, mine int
		require.NoError(t, tenant.QueryRow(dbutil.WithOrg(ctx, "org-1"), "SELECT count(*), count(*) FILTER (WHERE organization_id = 'org-1') FROM "+table).Scan(&n, &mine))
		require.Positive(t, mine, table)
		require.Equal(t, mine, n, "%s: org-1 sees only its own rows", table)
	}
	tag, err = tenant.Exec(dbutil.WithOrg(ctx, "org-1"), "DELETE FROM org_pauses WHERE organization_id = 'org-2'")
	require.NoError(t, err)
	require.Zero(t, tag.RowsAffected(), "org-1 cannot resume org-2")

	// Rate buckets are the workers' alone: a global bucket's row is every
	// organization's, so the API role may not read the table at all.
	_, err = b.Pool.Exec(ctx, `INSERT INTO flow_buckets (name, scope_key, tokens, refilled_at) VALUES ('t', 'org-2', 1, now()) ON CONFLICT DO NOTHING`)
	require.NoError(t, err)
	var n int
	err = tenant.QueryRow(dbutil.WithOrg(ctx, "org-1"), "SELECT count(*) FROM flow_buckets").Scan(&n)
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "42501", pgErr.Code, "permission denied")

	// Writes are held to the organization too: org-1 cannot touch org-2's rows.
	tag, err = tenant.Exec(dbutil.WithOrg(ctx, "org-1"), "UPDATE action_invocations SET status = 'cancelled' WHERE organization_id = 'org-2'")
	require.NoError(t, err)
	require.Zero(t, tag.RowsAffected())
	_, err = tenant.Exec(dbutil.WithOrg(ctx, "org-1"), "INSERT INTO action_modes (organization_id, scope, scope_id, source_id, action_id, mode, updated_by) VALUES ('org-2', 'org', 'org-2', 'slack', 'send_message', 'allow', 'x')")
	require.Error(t, err, "a row of another organization cannot be written")
}
