package api_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
)

// TestSourcesClaim_WebhookDeliveries: a webhook's deliveries listing shows
// a token with a sources claim only the deliveries of its sources'
// invocations (their event ids and types), filtered before the page is
// cut; "sources": [] sees none, a token without the claim every one. The
// webhook itself it still reads.
func TestSourcesClaim_WebhookDeliveries(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-sources-deliveries")
	b.StoreToken("github", "ghp_sourcesdeliveries0123456789abcdefghij", "")
	b.SetModes(map[string]string{"slack:send_message": "require_approval", "github:create_issue": "require_approval"})
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(receiver.Close)
	r := b.Do("POST", "/v1/webhooks", b.Owner(), map[string]any{"url": receiver.URL, "events": []string{"action_approval_request"}})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	deliveries := "/v1/webhooks/" + r.Body["webhook"].(map[string]any)["id"].(string) + "/deliveries"

	// Newest first: two of github between two of slack.
	r = b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "first"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	for _, title := range []string{"one", "two"} {
		r = invokeAs(b, b.Sandbox(), "github", "create_issue", map[string]any{"owner": "octo", "repo": "web", "title": title})
		require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	}
	r = b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "last"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))

	list := func(token, query string) []float64 {
		t.Helper()
		r := b.Do("GET", deliveries+query, token, nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		var events []float64
		for _, d := range r.Body["deliveries"].([]any) {
			events = append(events, d.(map[string]any)["event_id"].(float64))
		}
		return events
	}
	var all []float64
	require.Eventually(t, func() bool { all = list(b.Admin(), ""); return len(all) == 4 }, 20*time.Second, 50*time.Millisecond)

	narrowed := func(sources ...string) string {
		return b.Token(auth.Claims{Kind: auth.KindUser, Role: auth.RoleAdmin, Sources: auth.OnlySources(sources...)})
	}
	github, slack := narrowed("github"), narrowed("slack")
	require.Equal(t, all[1:3], list(github, ""))
	require.Equal(t, []float64{all[0], all[3]}, list(slack, ""))
	require.Equal(t, all, list(narrowed("github", "slack"), ""))
	require.Empty(t, list(narrowed(), ""))
	// The page is cut after the filter.
	require.Equal(t, all[2:3], list(github, "?limit=1&offset=1"))
	require.Equal(t, all[3:4], list(slack, "?limit=1&offset=1"))
}
