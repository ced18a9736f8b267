package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/intent"
)

// TestIntent_ApprovedWithoutEndpointAsksAgain: a connector call approved
// under an intent sealed before intents named the server (written here as
// such a build wrote it: no endpoint, its digest without one) is not run
// unchecked, since the connector's URL may have changed since: nothing is
// sent, the invocation is pending again with "server changed"; approving
// it again makes exactly one call.
func TestIntent_ApprovedWithoutEndpointAsksAgain(t *testing.T) {
	t.Parallel()
	srv := newMCPServer(t)
	b := apptest.Start(t, nil)
	_, source := createConnector(t, b, srv, nil)

	r := invokeTool(b, source, "create_note", map[string]any{"title": "quarterly"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	id := r.Body["invocation_id"].(string)
	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/queues/pause", b.Admin(), nil).Status)
	r = b.Do("POST", "/v1/invocations/"+id+"/approve", b.Admin(), map[string]string{"mode": "once"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	waitHeld(t, b, id)

	ctx := context.Background()
	var raw []byte
	require.NoError(t, b.Pool.QueryRow(ctx, `SELECT intent FROM action_invocations WHERE id = $1`, id).Scan(&raw))
	var sealed intent.Components
	require.NoError(t, json.Unmarshal(raw, &sealed))
	require.NotEmpty(t, sealed.Endpoint, "this build names the server")
	sealed.Endpoint = ""
	old, err := json.Marshal(&sealed)
	require.NoError(t, err)
	tag, err := b.Pool.Exec(ctx, `UPDATE action_invocations SET intent = $2, intent_digest = $3, approved_digest = $3 WHERE id = $1`,
		id, old, sealed.Digest())
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected())
	tag, err = b.Pool.Exec(ctx, `UPDATE invocation_approvals SET intent_digest = $2 WHERE invocation_id = $1`, id, sealed.Digest())
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected(), "the approval names the digest it approved")
	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/queues/resume", b.Admin(), nil).Status)

	again := waitPendingAgain(t, b, id)
	waitJobsSettled(t, b)
	require.Empty(t, srv.toolCalls(), "no call to a server nobody approved")
	require.Equal(t, []any{"server changed"}, again["intent"].(map[string]any)["changes"])
	require.Contains(t, lastEvent(t, b, id, "intent_changed")["reason"], "approved without the server")

	r = b.Do("POST", "/v1/invocations/"+id+"/approve", b.Admin(), map[string]string{"mode": "once"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	b.WaitStatus(id, "completed", 15*time.Second)
	waitJobsSettled(t, b)
	require.Len(t, srv.toolCalls(), 1, "exactly one call, after an approval naming the server")
}
