package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
)

// cancelPath is the session route that cancels invocation id.
func cancelPath(id string) string {
	return "/v1/sessions/" + apptest.Session + "/actions/invocations/" + id + "/cancel"
}

// An agent undoes an invocation of its own session that has not started:
// pending, or approved while its queue is paused. Its job is descheduled
// and the action never runs.
func TestCancel_SandboxUndoesItsOwnInvocation(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-undo")

	pending := b.Invoke("send_message", message).Body["invocation_id"].(string)
	require.Equal(t, "pending", b.Invocation(pending)["status"])
	r := b.Do("POST", cancelPath(pending), b.Sandbox(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, "cancelled", r.Body["invocation"].(map[string]any)["status"])
	require.Equal(t, "cancelled", jobState(t, b, pending))
	// Done once: it is no longer pending.
	e := requireAPIError(t, b.Do("POST", cancelPath(pending), b.Sandbox(), nil), http.StatusConflict, "conflict")
	require.Contains(t, e["message"], "cancelled")

	// Approved, but its queue is paused: it has not started.
	approved := b.Invoke("send_message", message).Body["invocation_id"].(string)
	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/queues/pause", b.Admin(), nil).Status)
	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/invocations/"+approved+"/approve", b.Owner(), map[string]string{"mode": "once"}).Status)
	r = b.Do("POST", cancelPath(approved), b.Sandbox(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, "cancelled", b.Invocation(approved)["status"])
	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/queues/resume", b.Admin(), nil).Status)

	waitJobsSettled(t, b)
	require.Empty(t, b.Slack.Requests(), "nothing cancelled ran")
}

// An invocation that has run cannot be undone: 409, and it is left as it
// is.
func TestCancel_FinishedInvocationConflicts(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-undo-late")
	b.SetModes(map[string]string{"slack:send_message": "allow"})

	id := b.Invoke("send_message", message).Body["invocation"].(map[string]any)["id"].(string)
	b.WaitStatus(id, "completed", 15*time.Second)
	e := requireAPIError(t, b.Do("POST", cancelPath(id), b.Sandbox(), nil), http.StatusConflict, "conflict")
	require.Contains(t, e["message"], "completed")
	require.Equal(t, "completed", b.Invocation(id)["status"])
	require.Len(t, b.Slack.Requests(), 1)
}

// Only a sandbox token cancels on its session's route, and only its own
// session's invocations of its own organization: another's is not found,
// another session's route is forbidden, and nothing changes.
func TestCancel_OnlyTheSessionsOwnInvocation(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-undo-others")
	mine := b.Invoke("send_message", message).Body["invocation_id"].(string)
	otherSession := b.Token(auth.Claims{Kind: auth.KindSandbox, SessionID: "session-2"})
	theirs := b.Do("POST", "/v1/sessions/session-2/actions/invoke", otherSession, map[string]any{
		"integration": "slack", "action": "send_message", "params": message,
	}).Body["invocation_id"].(string)
	otherOrg := b.Token(auth.Claims{Org: "org-2", Kind: auth.KindSandbox, SessionID: apptest.Session})

	requireAPIError(t, b.Do("POST", cancelPath(theirs), b.Sandbox(), nil), http.StatusNotFound, "not_found")
	requireAPIError(t, b.Do("POST", cancelPath(mine), otherOrg, nil), http.StatusNotFound, "not_found")
	requireAPIError(t, b.Do("POST", cancelPath("not-an-id"), b.Sandbox(), nil), http.StatusNotFound, "not_found")
	requireAPIError(t, b.Do("POST", cancelPath(mine), otherSession, nil), http.StatusForbidden, "forbidden")
	for _, tok := range []string{b.Owner(), b.Admin(), b.Member(), b.Service()} {
		requireAPIError(t, b.Do("POST", cancelPath(mine), tok, nil), http.StatusForbidden, "forbidden")
	}
	require.Equal(t, "pending", b.Invocation(mine)["status"])
	require.Equal(t, "pending", b.Invocation(theirs)["status"])
}
