package httpapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/apptest"
	"github.com/outboxd/outboxd/internal/auth"
	"github.com/outboxd/outboxd/internal/dbutil"
)

// TestTenant_QueriesWithoutOrgFilterSeeOneOrg issues, on purpose, queries
// that forget their organization filter through the API's pool: the
// database shows each organization only its own rows, and a context without
// an organization nothing at all. The owner's pool (the workers') sees all.
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

	// Writes are held to the organization too: org-1 cannot touch org-2's rows.
	tag, err := tenant.Exec(dbutil.WithOrg(ctx, "org-1"), "UPDATE action_invocations SET status = 'cancelled' WHERE organization_id = 'org-2'")
	require.NoError(t, err)
	require.Zero(t, tag.RowsAffected())
	_, err = tenant.Exec(dbutil.WithOrg(ctx, "org-1"), "INSERT INTO action_modes (organization_id, scope, scope_id, source_id, action_id, mode, updated_by) VALUES ('org-2', 'org', 'org-2', 'slack', 'send_message', 'allow', 'x')")
	require.Error(t, err, "a row of another organization cannot be written")
}
