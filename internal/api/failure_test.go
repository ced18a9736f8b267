package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
)

func TestInvoke_ProviderErrorFailsWithoutRetry(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{SlackFunc: apptest.SlackError("channel_not_found")})
	b.StoreSlackToken("xoxb-token")
	b.SetModes(map[string]string{"slack:send_message": "allow"})

	r := b.Invoke("send_message", message)
	e := requireAPIError(t, r, http.StatusBadGateway, "action_failed")
	require.Contains(t, e["message"], "channel_not_found")
	inv := r.Body["invocation"].(map[string]any)
	require.Equal(t, "failed", inv["status"])
	require.Contains(t, inv["error"], "channel_not_found")
	require.NotNil(t, inv["completed_at"])
	id := inv["id"].(string)

	// Not retried: River cancelled the job and Slack saw one request.
	waitJobState(t, b, id, "cancelled")
	require.Len(t, b.Slack.Requests(), 1)
	require.Equal(t, "failed", b.Invocation(id)["status"])

	t.Run("EnvelopeShowsFailed", func(t *testing.T) {
		env := postEnvelope(t, b, envelope("doomed", nil), http.StatusCreated)
		done := waitEnvelope(t, b, env["action_id"].(string), "failed", 10*time.Second)
		require.Contains(t, done["result"].(map[string]any)["error"], "channel_not_found")
		require.Equal(t, "failed", done["invocation_status"])
	})
}

func TestInvoke_MissingCredentialFails(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.SetModes(map[string]string{"slack:send_message": "allow"})

	r := b.Invoke("send_message", message)
	e := requireAPIError(t, r, http.StatusBadGateway, "action_failed")
	require.Contains(t, e["message"], "credential_missing")
	inv := r.Body["invocation"].(map[string]any)
	require.Equal(t, "failed", inv["status"])
	require.Contains(t, inv["error"], "credential_missing")
	waitJobState(t, b, inv["id"].(string), "cancelled")
	require.Empty(t, b.Slack.Requests())

	// Another org's credential is not used.
	owner2 := b.Token(auth.Claims{Org: "org-2", Kind: auth.KindUser, Role: auth.RoleOwner})
	require.Equal(t, http.StatusOK, b.Do("PUT", "/v1/credentials/slack", owner2, map[string]string{"token": "xoxb-org-2"}).Status)
	r = b.Invoke("send_message", map[string]any{"channel": "C1", "text": "again"})
	requireAPIError(t, r, http.StatusBadGateway, "action_failed")
	require.Empty(t, b.Slack.Requests())

	// Once a credential is stored, the same action goes through.
	b.StoreSlackToken("xoxb-now")
	r = b.Invoke("send_message", map[string]any{"channel": "C1", "text": "third"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Len(t, b.Slack.Requests(), 1)
}

// With metrics.token set, /metrics answers only a request bearing it: not
// an anonymous one, not another token, not even a valid outboxd token.
func TestOps_MetricsToken(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{MetricsToken: "scrape-secret"})
	for name, token := range map[string]string{"none": "", "wrong": "scrape-secreT", "owner": b.Owner()} {
		r := b.Do("GET", "/metrics", token, nil)
		requireAPIError(t, r, http.StatusUnauthorized, "unauthorized")
		require.Equal(t, `Bearer realm="metrics"`, r.Header.Get("WWW-Authenticate"), name)
		require.NotContains(t, string(r.Raw), "outboxd_", name)
	}
	r := b.Do("GET", "/metrics", "scrape-secret", nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Contains(t, string(r.Raw), "outboxd_queue_jobs")
}

func TestOps_HealthReadyMetrics(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)

	r := b.Do("GET", "/healthz", "", nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, "ok", r.Body["status"])
	r = b.Do("GET", "/readyz", "", nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, "ready", r.Body["status"])

	b.StoreSlackToken("xoxb-token")
	b.SetModes(map[string]string{"slack:send_message": "allow"})
	require.Equal(t, http.StatusOK, b.Invoke("send_message", message).Status)
	postEnvelope(t, b, envelope("metrics", map[string]any{"approval": "required"}), http.StatusCreated)

	// Counters move just after the transactions they count commit, so poll.
	want := []string{
		`outboxd_invocations_total{mode="allow",status="approved"} 1`,
		`outboxd_invocations_total{mode="allow",status="completed"} 1`,
		`outboxd_invocations_total{mode="require_approval",status="pending"} 1`,
		`outboxd_queue_jobs{queue="actions",state="completed"} 1`,
		`outboxd_queue_jobs{queue="actions",state="pending"} 1`,
		`outboxd_queue_age_seconds{queue="actions"} 0`,
		"outboxd_job_duration_seconds_bucket",
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		r = b.Do("GET", "/metrics", "", nil)
		require.Equal(t, http.StatusOK, r.Status)
		var missing []string
		for _, w := range want {
			if !strings.Contains(string(r.Raw), w) {
				missing = append(missing, w)
			}
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics lack %q:\n%s", missing, r.Raw)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
