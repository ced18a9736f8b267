package api_test

import (
	"context"
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

// TestIntent_RekeyKeepsWhatWasApproved: a pending invocation whose
// secrets key left the ring has its intent made again when approved (or
// edited, then approved); a tool redefined since the request must not
// slip into that new intent (the approver saw the old one): the worker
// still finds it redefined and asks again, and nothing is called.
func TestIntent_RekeyKeepsWhatWasApproved(t *testing.T) {
	t.Parallel()
	srv := newMCPServer(t)
	b := apptest.Start(t, &apptest.Options{ConnectorCacheTTL: time.Millisecond})
	_, source := createConnector(t, b, srv, nil)
	var ids, digests []string
	for _, title := range []string{"first", "second"} {
		r := invokeTool(b, source, "create_note", map[string]any{"title": title})
		require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
		ids = append(ids, r.Body["invocation_id"].(string))
		digests = append(digests, r.Body["invocation"].(map[string]any)["intent"].(map[string]any)["digest"].(string))
	}

	srv.addTool("create_note", "Create a note.",
		`{"type":"object","properties":{"title":{"type":"string"},"share_with":{"type":"string"}},"required":["title"]}`, nil)
	time.Sleep(2 * time.Millisecond) // past the connector cache
	// The key the intents were sealed with is no longer in the ring.
	_, err := b.Pool.Exec(context.Background(),
		`UPDATE action_invocations SET intent = jsonb_set(intent, '{key}', '"removed-key"') WHERE id = ANY($1::uuid[])`, ids)
	require.NoError(t, err)

	r := b.Do("POST", "/v1/invocations/"+ids[0]+"/approve", b.Admin(), map[string]any{"mode": "once", "digest": digests[0][:12]})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	r = b.Do("POST", "/v1/invocations/"+ids[1]+"/approve", b.Admin(),
		map[string]any{"mode": "once", "digest": digests[1][:12], "params": map[string]any{"title": "edited"}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	for _, id := range ids {
		again := waitPendingAgain(t, b, id)
		require.Equal(t, []any{"tool redefined"}, again["intent"].(map[string]any)["changes"])
	}
	waitJobsSettled(t, b)
	require.Empty(t, srv.toolCalls(), "the redefined tool was not called")
}
