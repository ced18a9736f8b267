package worker_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/approvers"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/preview"
	"github.com/outboxd/outboxd/internal/domain/preview/previewstore"
	"github.com/outboxd/outboxd/policy"
	"github.com/outboxd/outboxd/worker"
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

// previewText is the text of a rendered preview, "" for none.
func previewText(b *apptest.Bundle, id string) string {
	pv, _ := b.Invocation(id)["preview"].(map[string]any)
	body, _ := pv["preview"].(map[string]any)
	text, _ := body["text"].(string)
	return text
}

// TestPreview_EditLeavingPendingRendersAgain: an approver's edit that
// leaves the invocation pending (a second approver to come) drops its
// preview and renders the edited params; a rendering of the old intent
// that lands after the edit is not stored.
func TestPreview_EditLeavingPendingRendersAgain(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{Approvals: approvers.Config{Required: map[policy.Tier]int{policy.TierR2: 2}}})
	b.StoreSlackToken("xoxb-preview-edit")
	r := b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "the old text"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	id := r.Body["invocation_id"].(string)
	old := r.Body["invocation"].(map[string]any)["intent"].(map[string]any)["digest"].(string)
	waitPreview(t, b, id)
	require.Equal(t, "the old text", previewText(b, id))

	carol := b.Token(auth.Claims{Kind: auth.KindUser, Role: auth.RoleAdmin, RegisteredClaims: jwt.RegisteredClaims{Subject: "carol"}})
	r = b.Do("POST", "/v1/invocations/"+id+"/approve", carol,
		map[string]any{"mode": "once", "params": map[string]any{"channel": "C0123456789", "text": "the new text"}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	inv := b.Invocation(id)
	require.Equal(t, "pending", inv["status"], "one approval of two")
	require.NotEqual(t, "the old text", previewText(b, id), "the old params' preview is not shown as current")
	require.Eventually(t, func() bool { return previewText(b, id) == "the new text" }, 20*time.Second, 50*time.Millisecond,
		"the preview renders the edited params")
	require.Eventually(t, func() bool {
		states, _ := previewJobs(t, b, id)
		return len(states) == 2 && states[0] == "completed" && states[1] == "completed"
	}, 10*time.Second, 50*time.Millisecond, "a preview job at the creation, another at the edit")

	// A job that rendered the old intent and stores after the edit.
	stored, err := previewstore.New().Put(context.Background(), b.Pool, apptest.Org, uuid.MustParse(id), old,
		&preview.Record{Status: preview.StatusRendered, Preview: &executors.Preview{Kind: "message", Text: "the old text"}})
	require.NoError(t, err)
	require.False(t, stored, "a rendering of an intent changed since is dropped")
	require.Equal(t, "the new text", previewText(b, id))
}

// TestPreview_AskedAgainRendersAgain: an invocation asked again because
// its intent changed (the credential replaced after the approval) gets a
// new preview, rendered with what will run now.
func TestPreview_AskedAgainRendersAgain(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-preview-first")
	r := b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "asked again"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	id := r.Body["invocation_id"].(string)
	first := waitPreview(t, b, id)["rendered_at"]

	// The organization's queue holds the approved job while the
	// credential is replaced.
	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/queues/pause", b.Admin(), nil).Status)
	r = b.Do("POST", "/v1/invocations/"+id+"/approve", b.Admin(), map[string]string{"mode": "once"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, b.Pool.QueryRow(context.Background(), `SELECT count(*) FROM river_job j JOIN action_invocations i ON i.job_id = j.id
			WHERE i.id = $1 AND j.state = 'scheduled' AND j.metadata ? 'org_paused_at'`, id).Scan(&n))
		return n == 1
	}, 15*time.Second, 20*time.Millisecond)
	b.StoreToken("slack", "xoxb-preview-second", "")
	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/queues/resume", b.Admin(), nil).Status)

	require.Eventually(t, func() bool {
		inv := b.Invocation(id)
		pv, _ := inv["preview"].(map[string]any)
		return inv["status"] == "pending" && pv != nil && pv["rendered_at"] != first
	}, 20*time.Second, 50*time.Millisecond, "pending again, with a new preview")
	require.Equal(t, "asked again", previewText(b, id))
	states, _ := previewJobs(t, b, id)
	require.Len(t, states, 2, "a preview job at the creation, another at the re-ask")
	rendered := false
	for _, c := range b.Slack.AllRequests() {
		rendered = rendered || (c.Path == "/conversations.info" && c.Authorization == "Bearer xoxb-preview-second")
	}
	require.True(t, rendered, "the new preview is rendered with the credential now stored")
}

// TestRedact_ChangesAndNotes: an update's before and after of a field
// named like a secret are redacted as its value would be, and every text,
// a note included, is cut to the bound.
func TestRedact_ChangesAndNotes(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("n", 10_000)
	out := worker.Redact(&executors.Preview{
		Kind:    "update",
		Title:   "update issue",
		Fields:  []executors.PreviewField{{Name: "api_key", Value: "field-secret"}, {Name: "title", Value: "kept"}},
		Changes: []executors.PreviewChange{{Field: "password", Before: "old-secret", After: "new-secret"}, {Field: "status", Before: "open", After: "closed"}},
		Notes:   []string{long, "mentions own-secret"},
	}, []string{"own-secret"})
	raw, err := json.Marshal(out)
	require.NoError(t, err)
	for _, secret := range []string{"field-secret", "old-secret", "new-secret", "own-secret"} {
		require.NotContains(t, string(raw), secret)
	}
	require.Equal(t, "kept", out.Fields[1].Value)
	require.Equal(t, executors.PreviewChange{Field: "status", Before: "open", After: "closed"}, out.Changes[1])
	require.Less(t, len(out.Notes[0]), 4100)
}
