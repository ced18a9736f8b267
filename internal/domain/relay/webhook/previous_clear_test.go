package webhook_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
)

// TestWebhook_PreviousSecretNeverInClear: the secret a rotation replaces
// is in no answer (the rotation's, the endpoint's), no audit entry, no
// delivery, event or job, and no log line, while it signs and when it
// does not open (the warning names the endpoint, not the secret); stored,
// it is sealed.
func TestWebhook_PreviousSecretNeverInClear(t *testing.T) {
	t.Parallel()
	logs := &apptest.Logs{}
	b := apptest.Start(t, &apptest.Options{Logs: logs})
	b.StoreSlackToken("xoxb-hooks")
	rc := newRecording(t)
	id, first := createWebhook(t, b, rc.server.URL+"/hook", "action_approval_request")
	r := b.Do("POST", "/v1/webhooks/"+id+"/rotate-secret", b.Admin(), map[string]any{"overlap": "1h"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	second := r.Body["secret"].(string)
	require.NotContains(t, string(r.Raw), first, "the rotation's answer")
	require.NotNil(t, r.Body["previous_valid_until"])

	delivered := 0
	deliver := func() recorded {
		t.Helper()
		r := b.Invoke("send_message", message)
		require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
		d := rc.next(t, delivered)
		delivered++
		return d
	}
	d := deliver()
	require.True(t, verifies(t, first, d))
	require.True(t, verifies(t, second, d))

	// A previous secret that does not open: the current one signs alone,
	// with a warning.
	ctx := context.Background()
	_, err := b.Pool.Exec(ctx, `UPDATE webhooks SET previous_secret_sealed = '\x00' || previous_secret_sealed WHERE id = $1`, id)
	require.NoError(t, err)
	d = deliver()
	require.True(t, verifies(t, second, d))
	require.False(t, verifies(t, first, d))
	require.Contains(t, logs.String(), "the previous webhook signing secret does not open")

	for _, where := range []string{
		`SELECT coalesce(string_agg(a::text, ' '), '') FROM audit_entries a`,
		`SELECT coalesce(string_agg(d::text, ' '), '') FROM webhook_deliveries d`,
		`SELECT coalesce(string_agg(e::text, ' '), '') FROM invocation_events e`,
		`SELECT coalesce(string_agg(j::text, ' '), '') FROM river_job j`,
		`SELECT encode(previous_secret_sealed, 'escape') || encode(secret_sealed, 'escape') FROM webhooks`,
	} {
		var text string
		require.NoError(t, b.Pool.QueryRow(ctx, where).Scan(&text), where)
		require.NotContains(t, text, first, where)
		require.NotContains(t, text, strings.TrimPrefix(first, "whsec_"), where)
	}
	g := b.Do("GET", "/v1/webhooks/"+id, b.Admin(), nil)
	require.NotContains(t, string(g.Raw), first)
	l := b.Do("GET", "/v1/webhooks", b.Admin(), nil)
	require.NotContains(t, string(l.Raw), first)
	require.NotContains(t, logs.String(), first)
	require.NotContains(t, logs.String(), strings.TrimPrefix(first, "whsec_"))
}
