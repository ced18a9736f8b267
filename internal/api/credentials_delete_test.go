package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
)

// TestCredentials_Delete deletes one credential at a time, a user's or the
// organization's, and leaves the others: the next invocation then uses
// what is left.
func TestCredentials_Delete(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-org")
	r := b.Do("PUT", "/v1/credentials/slack", b.Owner(), map[string]string{"token": "xoxb-user", "user_id": "u-1"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Len(t, b.Do("GET", "/v1/credentials", b.Owner(), nil).Body["credentials"], 2)

	r = b.Do("DELETE", "/v1/credentials/slack?user_id=u-1", b.Admin(), nil)
	require.Equal(t, http.StatusNoContent, r.Status, string(r.Raw))
	creds := b.Do("GET", "/v1/credentials", b.Owner(), nil).Body["credentials"].([]any)
	require.Len(t, creds, 1)
	require.NotContains(t, creds[0], "user_id", "the organization's is left")
	requireAPIError(t, b.Do("DELETE", "/v1/credentials/slack?user_id=u-1", b.Admin(), nil), http.StatusNotFound, "not_found")
	requireAPIError(t, b.Do("DELETE", "/v1/credentials/nosuch", b.Admin(), nil), http.StatusNotFound, "not_found")
	requireAPIError(t, b.Do("DELETE", "/v1/credentials/slack", b.Member(), nil), http.StatusForbidden, "forbidden")

	b.SetModes(map[string]string{"slack:send_message": "allow"})
	r = b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "with the org's"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	posts := b.Slack.Posts()
	require.Equal(t, "Bearer xoxb-org", posts[len(posts)-1].Authorization)

	r = b.Do("DELETE", "/v1/credentials/slack", b.Owner(), nil)
	require.Equal(t, http.StatusNoContent, r.Status, string(r.Raw))
	require.Empty(t, b.Do("GET", "/v1/credentials", b.Owner(), nil).Body["credentials"])
	r = b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "without one"})
	require.NotEqual(t, http.StatusOK, r.Status, "no credential is left to post with: %s", r.Raw)
	require.Len(t, b.Slack.Posts(), len(posts), "nothing was posted")

	trail := b.Do("GET", "/v1/audit?action=credential.delete", b.Owner(), nil)
	require.Equal(t, http.StatusOK, trail.Status, string(trail.Raw))
	entries := trail.Body["entries"].([]any)
	require.Len(t, entries, 2, "each deletion is in the audit trail")
	require.Equal(t, "slack", entries[0].(map[string]any)["target_id"])
	require.Equal(t, "slack/u-1", entries[1].(map[string]any)["target_id"])
	require.NotContains(t, string(trail.Raw), "xoxb-", "never a token")
}
