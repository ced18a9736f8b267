package worker_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/invocation"
)

// previewJobs returns the states and attempts of an invocation's preview
// jobs.
func previewJobs(t *testing.T, b *apptest.Bundle, id string) (states []string, attempts []int) {
	t.Helper()
	rows, err := b.Pool.Query(context.Background(),
		`SELECT state::text, attempt FROM river_job WHERE kind = 'render_preview' AND args->>'invocation_id' = $1`, id)
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var s string
		var a int
		require.NoError(t, rows.Scan(&s, &a))
		states, attempts = append(states, s), append(attempts, a)
	}
	require.NoError(t, rows.Err())
	return states, attempts
}

// waitPreview waits for the invocation's preview to be recorded.
func waitPreview(t *testing.T, b *apptest.Bundle, id string) map[string]any {
	t.Helper()
	var pv map[string]any
	require.Eventually(t, func() bool {
		pv, _ = b.Invocation(id)["preview"].(map[string]any)
		return pv != nil
	}, 20*time.Second, 50*time.Millisecond)
	return pv
}

// TestPreview_RenderedRedactedAndOnlyForPending: a pending invocation's
// job renders its preview from the exact params and stores it redacted;
// an invocation that runs at once gets no preview job.
func TestPreview_RenderedRedactedAndOnlyForPending(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-preview-token")
	r := b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "the key is xoxb-1234567890-s3cr3tvalue"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	id := r.Body["invocation_id"].(string)

	pv := waitPreview(t, b, id)
	require.Equal(t, "rendered", pv["status"])
	text := pv["preview"].(map[string]any)["text"].(string)
	require.NotContains(t, text, "s3cr3tvalue", "the preview is redacted like a result")
	require.Contains(t, text, "the key is")
	require.Eventually(t, func() bool {
		states, _ := previewJobs(t, b, id)
		return len(states) == 1 && states[0] == "completed"
	}, 10*time.Second, 50*time.Millisecond, "one preview job, completed")
	require.Equal(t, string(invocation.StatusPending), b.Invocation(id)["status"])

	allowSlack(b)
	r = b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "runs at once"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	ran := r.Body["invocation"].(map[string]any)["id"].(string)
	states, _ := previewJobs(t, b, ran)
	require.Empty(t, states, "only pending invocations are previewed")
	require.Nil(t, b.Invocation(ran)["preview"])
}

// TestPreview_PassingFailureIsTriedAFewTimesThenRecorded: a rendering that
// keeps failing with a retryable error is tried PreviewAttempts times,
// then recorded as failed with a note; the job is not retried further.
func TestPreview_PassingFailureIsTriedAFewTimesThenRecorded(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{SlackFunc: func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/conversations.info") {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		apptest.SlackOK(w, r)
	}})
	b.StoreSlackToken("xoxb-preview-token")
	r := b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "hello"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	id := r.Body["invocation_id"].(string)

	pv := waitPreview(t, b, id)
	require.Equal(t, "failed", pv["status"])
	require.Contains(t, pv["note"], "http_503")
	require.Nil(t, pv["preview"])
	require.Eventually(t, func() bool {
		states, attempts := previewJobs(t, b, id)
		return len(states) == 1 && states[0] == "completed" && attempts[0] == invocation.PreviewAttempts
	}, 10*time.Second, 50*time.Millisecond)
	calls := 0
	for _, c := range b.Slack.AllRequests() {
		if c.Path == "/conversations.info" {
			calls++
		}
	}
	require.Equal(t, invocation.PreviewAttempts, calls, "one look-up per attempt, no more")
	require.Equal(t, string(invocation.StatusPending), b.Invocation(id)["status"], "a failed preview decides nothing")
}
