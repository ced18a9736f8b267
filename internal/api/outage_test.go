package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app"
	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

// TestOutage_DatabaseUnavailable stops the API's Postgres (a private server
// of this test), checks that reads and writes answer 503
// database_unavailable with Retry-After, then starts it again and checks
// that nothing was written and that the API recovers on its own.
func TestOutage_DatabaseUnavailable(t *testing.T) {
	t.Parallel()
	pg := pgtest.NewPrivate(t)
	b := apptest.Start(t, &apptest.Options{DatabaseURL: pg.URL, Role: app.RoleAPI})
	b.StoreSlackToken("xoxb-outage-token")
	pending := b.Invoke("send_message", message).Body["invocation_id"].(string)
	before := databaseDigest(t, b)

	require.NoError(t, pg.Stop())
	sess := "/v1/sessions/" + apptest.Session + "/actions"
	for _, c := range []struct {
		method, path, token string
		body                any
	}{
		{"POST", sess + "/invoke", b.Sandbox(), map[string]any{"integration": "slack", "action": "send_message", "params": message}},
		{"POST", "/v1/envelopes", b.Service(), envelope("outage-1", nil)},
		{"POST", "/v1/invocations/" + pending + "/approve", b.Owner(), map[string]string{"mode": "always"}},
		{"POST", "/v1/invocations/" + pending + "/deny", b.Owner(), map[string]string{"reason": "no"}},
		{"PUT", "/v1/action-modes", b.Owner(), map[string]string{"slack:send_message": "allow"}},
		{"PUT", "/v1/credentials/slack", b.Owner(), map[string]string{"token": "xoxb-replaced"}},
		{"PUT", "/v1/do-not-contact", b.Owner(), map[string]any{"patterns": []string{"#general"}}},
		{"POST", "/v1/dead-letters/retry", b.Owner(), map[string]any{"ids": []string{pending}}},
		{"POST", "/v1/queues/pause", b.Owner(), nil},
		{"GET", "/v1/invocations", b.Owner(), nil},
		{"GET", "/v1/invocations/" + pending, b.Owner(), nil},
		{"GET", sess + "/available", b.Sandbox(), nil},
		{"GET", "/v1/credentials", b.Owner(), nil},
		{"GET", "/v1/queues", b.Owner(), nil},
	} {
		r := b.Do(c.method, c.path, c.token, c.body)
		e := requireAPIError(t, r, http.StatusServiceUnavailable, "database_unavailable")
		require.Equal(t, "5", r.Header.Get("Retry-After"), c.method+" "+c.path)
		require.EqualValues(t, 5, e["details"].(map[string]any)["retry_after_seconds"])
	}
	requireAPIError(t, b.Do("GET", "/readyz", "", nil), http.StatusServiceUnavailable, "database_unreachable")

	require.NoError(t, pg.Start())
	require.Eventually(t, func() bool {
		return b.Do("GET", "/v1/invocations", b.Owner(), nil).Status == http.StatusOK
	}, 20*time.Second, 100*time.Millisecond)
	require.Equal(t, before, databaseDigest(t, b), "a request refused during the outage wrote something")
	require.Equal(t, "pending", b.Invocation(pending)["status"])
	require.Equal(t, http.StatusAccepted, b.Invoke("send_message", message).Status)
}
