package slackapproval_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
)

// TestSlack_CancelledAfterApprovalUpdatesTheMessage: an invocation a
// human approved that is cancelled before it starts (its queue paused)
// by the agent, or withdrawn by a token revocation, no longer shows
// "Approved by …" in Slack: its message says it was cancelled before it
// ran, by whom and why. A pending one's says who cancelled it and why
// too. Before, the relay ignored approved→cancelled and the message kept
// saying approved.
func TestSlack_CancelledAfterApprovalUpdatesTheMessage(t *testing.T) {
	t.Parallel()
	b := approvalsBundle(t)
	// The updates of the message that shows text.
	updates := func(text string) []string {
		var out []string
		for _, r := range slackCalls(b, "/chat.update") {
			if strings.Contains(fmt.Sprint(r.Body["blocks"]), text) {
				raw, _ := json.Marshal(r.Body["blocks"])
				require.NotContains(t, string(raw), `"actions"`, "no buttons")
				out = append(out, r.Body["text"].(string))
			}
		}
		return out
	}
	waitUpdate := func(text string, want ...string) {
		t.Helper()
		require.Eventually(t, func() bool {
			for _, u := range updates(text) {
				if !slices.ContainsFunc(want, func(w string) bool { return !strings.Contains(u, w) }) {
					return true
				}
			}
			return false
		}, 10*time.Second, 20*time.Millisecond, "an update of %q saying %q; got %q", text, want, updates(text))
	}
	ask := func(text string) string {
		r := b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": text})
		require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
		return r.Body["invocation_id"].(string)
	}

	// With the queue paused, approved invocations wait for their jobs.
	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/queues/pause", b.Admin(), nil).Status)
	cancelled, withdrawn, pending := ask("cancelled after approval"), ask("withdrawn after approval"), ask("withdrawn pending")
	require.Eventually(t, func() bool { return len(slackCalls(b, "/chat.postMessage")) == 3 }, 10*time.Second, 20*time.Millisecond)
	for _, id := range []string{cancelled, withdrawn} {
		newClicker(t, b, id, "") // posted, and recorded
		r := b.Do("POST", "/v1/invocations/"+id+"/approve", b.Admin(), map[string]string{"mode": "once"})
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		require.Equal(t, "approved", r.Body["invocation"].(map[string]any)["status"])
	}
	waitUpdate("cancelled after approval", "Approved by user-admin")
	waitUpdate("withdrawn after approval", "Approved by user-admin")

	// The agent cancels one.
	r := b.Do("POST", "/v1/sessions/"+apptest.Session+"/actions/invocations/"+cancelled+"/cancel", b.Sandbox(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	waitUpdate("cancelled after approval", "slack.send_message — Approved by user-admin, then cancelled before it ran, by sandbox-session-1")

	// A revocation of the session withdraws the other and the pending one.
	r = b.Do("POST", "/v1/revocations", b.Owner(), map[string]string{"session_id": apptest.Session})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	require.EqualValues(t, 2, r.Body["withdrawn"])
	// The reason is the cancelled event's: it names the revocation.
	why := fmt.Sprintf("revocation %v", r.Body["id"])
	waitUpdate("withdrawn after approval", "Approved by user-admin, then cancelled before it ran, by user-owner: ", why)
	waitUpdate("withdrawn pending", "Cancelled before anyone decided, by user-owner: ", why)
	for _, id := range []string{cancelled, withdrawn, pending} {
		require.Equal(t, "cancelled", b.Invocation(id)["status"])
	}
}

// A decision's reason and names are text in the updated message, not
// Slack markup: a deny reason's <!channel> does not notify the channel.
func TestSlack_DecisionReasonIsNotMarkup(t *testing.T) {
	t.Parallel()
	b := approvalsBundle(t)
	id := b.Invoke("send_message", message).Body["invocation_id"].(string)
	newClicker(t, b, id, "") // posted, and recorded
	r := b.Do("POST", "/v1/invocations/"+id+"/deny", b.Admin(), map[string]string{"reason": "<!channel> see <https://evil.example|this> & that"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Eventually(t, func() bool { return len(slackCalls(b, "/chat.update")) == 1 }, 10*time.Second, 20*time.Millisecond)
	update := slackCalls(b, "/chat.update")[0]
	raw, _ := json.Marshal(update.Body)
	require.NotContains(t, string(raw), "<!channel>")
	require.NotContains(t, string(raw), `\u003c!channel\u003e`)
	require.Contains(t, update.Body["text"], "Denied by user-admin: &lt;!channel&gt; see &lt;https://evil.example|this&gt; &amp; that")
}
