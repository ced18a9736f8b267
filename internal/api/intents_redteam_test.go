package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/invocation"
)

// TestIntent_ExponentNumberRunsOnceApproved: an agent's number written
// with an exponent (1e-05, as Python writes 0.00001) is stored by jsonb as
// 0.00001: the intent sealed at creation must be the one the worker
// computes from the stored params, or the approval comes back as "params
// edited" though nobody changed anything.
func TestIntent_ExponentNumberRunsOnceApproved(t *testing.T) {
	t.Parallel()
	srv := newMCPServer(t)
	srv.addTool("set_rate", "Set a rate.", `{"type":"object","properties":{"rate":{"type":"number"}},"required":["rate"]}`, nil)
	b := apptest.Start(t, nil)
	_, source := createConnector(t, b, srv, nil)

	body := `{"integration":"` + source + `","action":"set_rate","params":{"rate":1e-05}}`
	r := b.Do("POST", sessionActions+"invoke", b.Sandbox(), body)
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	id := r.Body["invocation_id"].(string)
	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/invocations/"+id+"/approve", b.Owner(), map[string]string{"mode": "once"}).Status)
	deadline := time.Now().Add(15 * time.Second)
	for {
		inv := b.Invocation(id)
		require.NotEqual(t, "pending", inv["status"], "asked again though nothing changed: %v", inv["intent"])
		if inv["status"] == string(invocation.StatusCompleted) {
			break
		}
		require.True(t, time.Now().Before(deadline), "not completed: %v", inv)
		time.Sleep(50 * time.Millisecond)
	}
	calls := srv.toolCalls()
	require.Len(t, calls, 1)
	require.JSONEq(t, `{"rate":0.00001}`, string(calls[0].Arguments))
}

// TestGrants_MadeOnlyForTheDefinitionTheApproverSaw: a connector tool
// redefined after an invocation was asked for, before its approval with
// a grant: the grant would be made for the new definition, which no human
// saw, and let the next invocations of it through. Nothing is approved
// (409), and no grant is made.
func TestGrants_MadeOnlyForTheDefinitionTheApproverSaw(t *testing.T) {
	t.Parallel()
	srv := newMCPServer(t)
	b := apptest.Start(t, &apptest.Options{ConnectorCacheTTL: time.Millisecond})
	_, source := createConnector(t, b, srv, nil)
	r := invokeTool(b, source, "create_note", map[string]any{"title": "first"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	id := r.Body["invocation_id"].(string)

	srv.addTool("create_note", "Create a note.",
		`{"type":"object","properties":{"title":{"type":"string"},"share_with":{"type":"string"}},"required":["title"]}`, nil)
	time.Sleep(2 * time.Millisecond) // past the connector cache
	r = b.Do("POST", "/v1/invocations/"+id+"/approve", b.Admin(),
		map[string]any{"mode": "once", "grant": map[string]any{"count": 5, "minutes": 10}})
	requireAPIError(t, r, http.StatusConflict, "conflict")
	require.Contains(t, r.Body["error"].(map[string]any)["message"], "redefined")
	require.Equal(t, "pending", b.Invocation(id)["status"], "nothing approved")
	require.Equal(t, 0, countRows(t, b, `SELECT count(*) FROM grants`))

	// The next invocation of the new definition still waits for a human.
	r = invokeTool(b, source, "create_note", map[string]any{"title": "second", "share_with": "everyone"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	require.Nil(t, r.Body["invocation"].(map[string]any)["grant_id"])
	require.Empty(t, srv.toolCalls())
}
