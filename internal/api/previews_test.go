package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
)

// TestPreview_ConnectorToolThroughThePipeline: a pending call of an MCP
// connector's tool gets its preview (each argument with its schema's
// description) from the worker, through the catalog's connector source,
// without the tool being called; GET /v1/invocations/{id} carries it.
func TestPreview_ConnectorToolThroughThePipeline(t *testing.T) {
	t.Parallel()
	srv := newMCPServer(t)
	b := apptest.Start(t, nil)
	_, source := createConnector(t, b, srv, nil)

	r := invokeTool(b, source, "create_note", map[string]any{"title": "hello"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	id := r.Body["invocation_id"].(string)
	var pv map[string]any
	require.Eventually(t, func() bool {
		pv, _ = b.Invocation(id)["preview"].(map[string]any)
		return pv != nil
	}, 20*time.Second, 50*time.Millisecond)
	require.Equal(t, "rendered", pv["status"], pv)
	p := pv["preview"].(map[string]any)
	require.Equal(t, "tool_args", p["kind"])
	require.Equal(t, "create_note on notes", p["title"])
	fields := p["fields"].([]any)
	require.Len(t, fields, 1)
	require.Equal(t, "title", fields[0].(map[string]any)["name"])
	require.Equal(t, "hello", fields[0].(map[string]any)["value"])
	require.Empty(t, srv.toolCalls(), "a preview calls no tool")

	// Another organization sees neither the invocation nor its preview:
	// the API's tenant role reads its own organization's previews only.
	other := b.Token(auth.Claims{Org: "org-2", Kind: auth.KindUser, Role: auth.RoleOwner})
	require.Equal(t, http.StatusNotFound, b.Do("GET", "/v1/invocations/"+id, other, nil).Status)
	ctx := context.Background()
	tenant, err := dbutil.TenantPool(ctx, b.Pool.Config())
	require.NoError(t, err)
	t.Cleanup(tenant.Close)
	count := func(org string) (n int) {
		require.NoError(t, tenant.QueryRow(dbutil.WithOrg(ctx, org), `SELECT count(*) FROM invocation_previews WHERE invocation_id = $1`, id).Scan(&n))
		return n
	}
	require.Equal(t, 1, count(apptest.Org))
	require.Zero(t, count("org-2"))
}
