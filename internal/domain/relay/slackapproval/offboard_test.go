package slackapproval_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A person revoked by subject (offboarding) no longer approves from
// Slack: a click carries no token, so the revocation removes the Slack
// approvers mapped to them, in its transaction, recorded in the audit
// trail. Another approver's mapping stays.
func TestSlack_RevokedPersonNoLongerApproves(t *testing.T) {
	t.Parallel()
	b := approvalsBundle(t) // U_ADMIN is alice
	r := b.Do("PUT", "/v1/approvers/slack", b.Owner(), map[string]any{
		"U_ADMIN": map[string]string{"user_id": "alice", "role": "admin"},
		"U_BOB":   map[string]string{"user_id": "bob", "role": "owner"},
	})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	r = b.Do("POST", "/v1/revocations", b.Owner(), map[string]any{"subject": "alice"})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))

	r = b.Do("GET", "/v1/approvers/slack", b.Owner(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.NotContains(t, string(r.Raw), "U_ADMIN", "alice's mapping is gone")
	require.Contains(t, string(r.Raw), "U_BOB", "bob's stays")
	var remover, revoker string
	require.NoError(t, b.Pool.QueryRow(context.Background(), `SELECT
		(SELECT actor_subject FROM audit_entries WHERE action = 'slack_settings.replace_approvers'
			AND before_state LIKE '%alice%' AND after_state NOT LIKE '%alice%' AND after_state LIKE '%bob%'),
		(SELECT actor_subject FROM audit_entries WHERE action = 'tokens.revoke')`).Scan(&remover, &revoker))
	require.Equal(t, revoker, remover, "the removal is in the audit trail, by the revoker")

	r = b.Invoke("send_message", message)
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	id := r.Body["invocation_id"].(string)
	require.Eventually(t, func() bool { return len(slackCalls(b, "/chat.postMessage")) == 1 }, 10*time.Second, 20*time.Millisecond)
	var value string
	for _, blk := range slackCalls(b, "/chat.postMessage")[0].Body["blocks"].([]any) {
		if els, ok := blk.(map[string]any)["elements"].([]any); ok && blk.(map[string]any)["type"] == "actions" {
			value = els[0].(map[string]any)["value"].(string)
		}
	}
	c := newClicker(t, b, id, value)
	require.Equal(t, http.StatusOK, c.click("U_ADMIN", "approve", secret, time.Now()).Status)
	require.Eventually(t, func() bool { return len(slackCalls(b, "/response")) == 1 }, 5*time.Second, 20*time.Millisecond)
	require.Contains(t, slackCalls(b, "/response")[0].Body["text"], "not an outboxd approver")
	require.Equal(t, "pending", b.Invocation(id)["status"])

	// Bob still approves.
	require.Equal(t, http.StatusOK, c.click("U_BOB", "approve", secret, time.Now()).Status)
	require.Equal(t, "bob", b.WaitStatus(id, "completed", 10*time.Second)["approved_by"])
}
