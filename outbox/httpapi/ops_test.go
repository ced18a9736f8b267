package httpapi_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/apptest"
	"github.com/outboxd/outboxd/internal/invocation"
	"github.com/outboxd/outboxd/worker"
)

// sendEnvelope enqueues a Slack message envelope and returns its action id.
func sendEnvelope(t *testing.T, b *apptest.Bundle, externalID string, extra map[string]any) string {
	t.Helper()
	body := map[string]any{
		"external_id": externalID,
		"tool":        map[string]string{"source": "slack", "action": "send_message"},
		"args":        map[string]string{"channel": "C0123456789", "text": "hello"},
	}
	for k, v := range extra {
		body[k] = v
	}
	r := b.Do("POST", "/v1/envelopes", b.Service(), body)
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	return r.Body["action_id"].(string)
}

func TestDeadLetters_ReplayAndDiscard(t *testing.T) {
	t.Parallel()
	var healthy atomic.Bool
	b := apptest.Start(t, &apptest.Options{
		Worker: worker.Config{MaxAttempts: 2, RetryBaseDelay: 50 * time.Millisecond},
		SlackFunc: func(w http.ResponseWriter, r *http.Request) {
			if healthy.Load() {
				apptest.SlackOK(w, r)
				return
			}
			w.WriteHeader(http.StatusBadGateway)
		},
	})
	b.StoreSlackToken("xoxb-dlq")
	b.SetModes(map[string]string{"slack:send_message": "allow"})
	id := sendEnvelope(t, b, "dlq-1", nil)
	other := sendEnvelope(t, b, "dlq-2", nil)
	failed := b.WaitStatus(id, invocation.StatusFailed, 15*time.Second)
	require.NotNil(t, failed["dead_lettered_at"])
	b.WaitStatus(other, invocation.StatusFailed, 15*time.Second)

	require.Equal(t, http.StatusForbidden, b.Do("GET", "/v1/dead-letters", b.Member(), nil).Status)
	list := b.Do("GET", "/v1/dead-letters", b.Admin(), nil)
	require.Equal(t, http.StatusOK, list.Status, string(list.Raw))
	require.Equal(t, float64(2), list.Body["total"])
	require.Contains(t, string(list.Raw), "502")

	// Replay with the provider healthy again: same invocation, same key.
	healthy.Store(true)
	r := b.Do("POST", "/v1/dead-letters/retry", b.Owner(), map[string]any{"ids": []string{id, "01a20000-0000-7000-8000-000000000000"}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	results := r.Body["results"].([]any)
	require.Equal(t, "retried", results[0].(map[string]any)["status"])
	require.Equal(t, "not_found", results[1].(map[string]any)["status"])
	done := b.WaitStatus(id, invocation.StatusCompleted, 15*time.Second)
	require.Equal(t, float64(1), done["replay_count"])
	require.Equal(t, "user-owner", done["replayed_by"])
	require.Nil(t, done["dead_lettered_at"])
	for _, req := range b.Slack.Posts() {
		if req.IdempotencyKey == id {
			continue
		}
		require.Equal(t, other, req.IdempotencyKey)
	}
	r = b.Do("POST", "/v1/dead-letters/"+id+"/retry", b.Owner(), nil)
	require.Equal(t, http.StatusConflict, r.Status, "a completed invocation is not a dead letter")

	// Discard keeps it failed and drops it from the list.
	r = b.Do("POST", "/v1/dead-letters/"+other+"/discard", b.Admin(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	inv := b.Invocation(other)
	require.Equal(t, "failed", inv["status"])
	require.Equal(t, "user-admin", inv["discarded_by"])
	require.Equal(t, float64(0), b.Do("GET", "/v1/dead-letters", b.Admin(), nil).Body["total"])
}

func TestGates_DoNotContactSkips(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-dnc")
	b.SetModes(map[string]string{"slack:send_message": "allow"})
	r := b.Do("PUT", "/v1/do-not-contact", b.Member(), map[string]any{"patterns": []string{"#general"}})
	require.Equal(t, http.StatusForbidden, r.Status)
	r = b.Do("PUT", "/v1/do-not-contact", b.Owner(), map[string]any{"patterns": []string{"[bad"}})
	require.Equal(t, http.StatusBadRequest, r.Status)
	r = b.Do("PUT", "/v1/do-not-contact", b.Owner(), map[string]any{"patterns": []string{"#general", "C09*"}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))

	r = b.Invoke("send_message", map[string]any{"channel": "general", "text": "hi all"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	inv := r.Body["invocation"].(map[string]any)
	require.Equal(t, "skipped", inv["status"])
	require.Contains(t, inv["error"], "do-not-contact")
	r = b.Invoke("send_message", map[string]any{"channel": "C0912345", "text": "hi"})
	require.Equal(t, "skipped", r.Body["invocation"].(map[string]any)["status"])
	require.Empty(t, b.Slack.Requests())

	r = b.Invoke("send_message", map[string]any{"channel": "C1234", "text": "hi"})
	require.Equal(t, "completed", r.Body["invocation"].(map[string]any)["status"])
	require.Len(t, b.Slack.Requests(), 1)
}

func TestGates_QuietHoursSnoozeWithoutSpendingAttempts(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-quiet")
	b.SetModes(map[string]string{"slack:send_message": "allow"})
	now := time.Now().UTC()
	clock := func(t time.Time) string { return t.Format("15:04") }
	r := b.Do("PUT", "/v1/quiet-hours", b.Owner(), map[string]any{"windows": []map[string]string{
		{"time_zone": "UTC", "start": clock(now.Add(-time.Hour)), "end": clock(now.Add(time.Hour))},
	}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	r = b.Do("PUT", "/v1/quiet-hours", b.Owner(), map[string]any{"windows": []map[string]string{{"time_zone": "Mars/Base", "start": "25:00", "end": "07:00"}}})
	require.Equal(t, http.StatusBadRequest, r.Status)
	require.Len(t, r.Body["error"].(map[string]any)["details"].(map[string]any)["fields"], 2)

	id := sendEnvelope(t, b, "quiet-1", nil)
	var state string
	var attempt int
	var scheduled time.Time
	require.Eventually(t, func() bool {
		require.NoError(t, b.Pool.QueryRow(context.Background(),
			`SELECT j.state::text, j.attempt, j.scheduled_at FROM river_job j JOIN action_invocations i ON i.job_id = j.id WHERE i.id = $1`, id).
			Scan(&state, &attempt, &scheduled))
		return state == "scheduled"
	}, 10*time.Second, 50*time.Millisecond)
	require.Equal(t, 0, attempt, "snoozing spends no attempt")
	require.WithinDuration(t, now.Add(time.Hour).Truncate(time.Minute), scheduled, 2*time.Minute)
	require.Equal(t, "approved", b.Invocation(id)["status"])
	require.Empty(t, b.Slack.Requests())

	// Lift the window and bring the job forward: it runs.
	require.Equal(t, http.StatusOK, b.Do("PUT", "/v1/quiet-hours", b.Owner(), map[string]any{"windows": []any{}}).Status)
	_, err := b.Pool.Exec(context.Background(), `UPDATE river_job SET scheduled_at = now() WHERE state = 'scheduled' AND kind = 'execute_action'`)
	require.NoError(t, err)
	b.WaitStatus(id, invocation.StatusCompleted, 15*time.Second)
}

func TestGates_MustRunBeforePassingWhileAwaitingApproval(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-late")
	id := sendEnvelope(t, b, "late-1", map[string]any{
		"approval":    "required",
		"constraints": map[string]any{"must_run_before": time.Now().Add(time.Second).UTC().Format(time.RFC3339Nano)},
	})
	time.Sleep(1200 * time.Millisecond)
	r := b.Do("POST", "/v1/invocations/"+id+"/approve", b.Owner(), map[string]string{"mode": "once"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	inv := b.WaitStatus(id, invocation.StatusSkipped, 10*time.Second)
	require.Contains(t, inv["error"], "must_run_before")
	require.Empty(t, b.Slack.Requests())
}

func TestQueues_PauseAndResume(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-queue")
	b.SetModes(map[string]string{"slack:send_message": "allow"})
	sendEnvelope(t, b, "warmup", nil)
	require.Eventually(t, func() bool { return len(b.Slack.Requests()) == 1 }, 10*time.Second, 50*time.Millisecond)

	require.Equal(t, http.StatusForbidden, b.Do("POST", "/v1/queues/actions/pause", b.Admin(), nil).Status)
	require.Equal(t, http.StatusNotFound, b.Do("POST", "/v1/queues/nope/pause", b.Owner(), nil).Status)
	// River's producer announces when it has paused; only then is nothing
	// fetched any more.
	events, unsubscribe := b.App.River.Subscribe(river.EventKindQueuePaused)
	defer unsubscribe()
	r := b.Do("POST", "/v1/queues/actions/pause", b.Owner(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	select {
	case e := <-events:
		require.Equal(t, "actions", e.Queue.Name)
	case <-time.After(10 * time.Second):
		t.Fatal("the producer of the actions queue never paused")
	}
	require.Eventually(t, func() bool {
		q := b.Do("GET", "/v1/queues", b.Admin(), nil)
		for _, item := range q.Body["queues"].([]any) {
			if item.(map[string]any)["name"] == "actions" {
				return item.(map[string]any)["paused"] == true
			}
		}
		return false
	}, 5*time.Second, 50*time.Millisecond)

	id := sendEnvelope(t, b, "paused-1", nil)
	time.Sleep(time.Second)
	require.Len(t, b.Slack.Requests(), 1, "a paused queue runs nothing")
	require.Equal(t, "approved", b.Invocation(id)["status"])

	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/queues/actions/resume", b.Owner(), nil).Status)
	b.WaitStatus(id, invocation.StatusCompleted, 15*time.Second)
}
