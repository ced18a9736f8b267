package api_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/invocation"
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

// The do-not-contact list is capped at 10,000 patterns, which every job
// of the organization reads: a longer one is a 400 naming the field and
// leaves the list as it was. Before, any number was stored (100,000 took
// a PUT of seconds, then every job read and matched them all).
func TestGates_DoNotContactIsCapped(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	patterns := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("C%07d", i)
		}
		return out
	}
	r := b.Do("PUT", "/v1/do-not-contact", b.Owner(), map[string]any{"patterns": []string{"#general"}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))

	r = b.Do("PUT", "/v1/do-not-contact", b.Owner(), map[string]any{"patterns": patterns(10001)})
	apiErr := requireAPIError(t, r, http.StatusBadRequest, "invalid_request")
	require.Equal(t, []string{"patterns"}, fieldNames(t, apiErr))
	require.Contains(t, apiErr["message"], "10000")
	r = b.Do("GET", "/v1/do-not-contact", b.Owner(), nil)
	require.Equal(t, []any{"#general"}, r.Body["patterns"], "unchanged")

	r = b.Do("PUT", "/v1/do-not-contact", b.Owner(), map[string]any{"patterns": patterns(10000)})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw[:min(len(r.Raw), 300)]))
	require.Len(t, r.Body["patterns"], 10000)
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

// TestGates_QuietHoursOfTheSourceHoldAnEnvelopeNamingAnotherBucket: an
// envelope may name another rate bucket than its source's
// (constraints.rate_bucket), but the quiet hours of its source's own bucket
// still hold it; a window of a bucket neither is its own holds nothing.
func TestGates_QuietHoursOfTheSourceHoldAnEnvelopeNamingAnotherBucket(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-quiet-bucket")
	b.SetModes(map[string]string{"slack:send_message": "allow"})
	now := time.Now().UTC()
	window := func(bucket string) map[string]any {
		return map[string]any{"windows": []map[string]string{{"bucket": bucket, "time_zone": "UTC",
			"start": now.Add(-time.Hour).Format("15:04"), "end": now.Add(time.Hour).Format("15:04")}}}
	}
	held := func(id string) bool {
		var state string
		require.NoError(t, b.Pool.QueryRow(context.Background(),
			`SELECT j.state::text FROM river_job j JOIN action_invocations i ON i.job_id = j.id WHERE i.id = $1`, id).Scan(&state))
		return state == "scheduled"
	}

	require.Equal(t, http.StatusOK, b.Do("PUT", "/v1/quiet-hours", b.Owner(), window("slack.minute")).Status)
	elsewhere := sendEnvelope(t, b, "quiet-elsewhere", map[string]any{"constraints": map[string]any{"rate_bucket": "github.api"}})
	require.Eventually(t, func() bool { return held(elsewhere) }, 10*time.Second, 50*time.Millisecond,
		"Slack's quiet hours hold a Slack envelope that names github.api")
	require.Equal(t, "approved", b.Invocation(elsewhere)["status"])

	// A window of another bucket holds a Slack envelope of its own bucket
	// no more than before.
	require.Equal(t, http.StatusOK, b.Do("PUT", "/v1/quiet-hours", b.Owner(), window("database")).Status)
	own := sendEnvelope(t, b, "quiet-own", nil)
	b.WaitStatus(own, invocation.StatusCompleted, 15*time.Second)
	require.Len(t, b.Slack.Posts(), 1)
}

func TestGates_MustRunBeforePassingWhileAwaitingApproval(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-late")
	id := sendEnvelope(t, b, "late-1", map[string]any{
		"approval":    "required",
		"constraints": map[string]any{"must_run_before": time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano)},
	})
	// The deadline passes while the invocation awaits approval. Two clocks
	// judge it (the database's in the worker's first statement, then the
	// worker's), so rather than waiting it out the test moves it into the
	// past.
	_, err := b.Pool.Exec(context.Background(), `UPDATE action_invocations SET must_run_before = now() - interval '1 minute' WHERE id = $1`, id)
	require.NoError(t, err)
	r := b.Do("POST", "/v1/invocations/"+id+"/approve", b.Owner(), map[string]string{"mode": "once"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	inv := b.WaitStatus(id, invocation.StatusSkipped, 10*time.Second)
	require.Contains(t, inv["error"], "must_run_before")
	require.Empty(t, b.Slack.Requests())
}

// TestQueues_OrganizationPause runs two organizations on one worker: the
// first pauses itself, and only its actions are held (no call, no attempt
// spent) while the second's run; each sees only its own counts; the second
// cannot resume the first; resuming runs the held job at once.
func TestQueues_OrganizationPause(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-org-1")
	b.SetModes(map[string]string{"slack:send_message": "allow"})
	const org2 = "org-2"
	owner2 := b.Token(auth.Claims{Org: org2, Kind: auth.KindUser, Role: auth.RoleOwner})
	admin2 := b.Token(auth.Claims{Org: org2, Kind: auth.KindUser, Role: auth.RoleAdmin})
	service2 := b.Token(auth.Claims{Org: org2, Kind: auth.KindService, AutomationID: "automation-1"})
	require.Equal(t, http.StatusOK, b.Do("PUT", "/v1/credentials/slack", owner2, map[string]string{"token": "xoxb-org-2"}).Status)
	require.Equal(t, http.StatusOK, b.Do("PUT", "/v1/action-modes", owner2, map[string]string{"slack:send_message": "allow"}).Status)
	send2 := func(externalID string, extra map[string]any) string {
		r := b.Do("POST", "/v1/envelopes", service2, envelope(externalID, extra))
		require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
		return r.Body["action_id"].(string)
	}
	status := func(id string) string {
		var st string
		require.NoError(t, b.Pool.QueryRow(ctx, `SELECT status FROM action_invocations WHERE id = $1`, id).Scan(&st))
		return st
	}
	waitDone := func(id string) {
		require.Eventually(t, func() bool { return status(id) == "completed" }, 15*time.Second, 20*time.Millisecond, id)
	}
	calls := func(id string) int {
		n := 0
		for _, r := range b.Slack.Requests() {
			if r.IdempotencyKey == id {
				n++
			}
		}
		return n
	}
	type job struct {
		state    string
		attempt  int
		heldBy   *time.Time
		snoozes  int
		metadata string
	}
	jobOf := func(id string) job {
		var j job
		require.NoError(t, b.Pool.QueryRow(ctx, `SELECT j.state::text, j.attempt, (j.metadata->>'org_paused_at')::timestamptz,
			coalesce((j.metadata->>'snoozes')::int, 0), j.metadata::text
			FROM river_job j JOIN action_invocations i ON i.job_id = j.id WHERE i.id = $1`, id).
			Scan(&j.state, &j.attempt, &j.heldBy, &j.snoozes, &j.metadata))
		return j
	}

	r := b.Do("POST", "/v1/queues/pause", b.Admin(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, true, r.Body["paused"])
	require.Equal(t, "user-admin", r.Body["paused_by"])
	pausedAt, err := time.Parse(time.RFC3339Nano, r.Body["paused_at"].(string))
	require.NoError(t, err)
	// Pausing again keeps the first pause.
	r = b.Do("POST", "/v1/queues/pause", b.Owner(), nil)
	require.Equal(t, "user-admin", r.Body["paused_by"], string(r.Raw))
	// River's shared queue is not the organization's to pause any more.
	require.Equal(t, http.StatusNotFound, b.Do("POST", "/v1/queues/actions/pause", b.Owner(), nil).Status)

	held := sendEnvelope(t, b, "held-1", nil)
	// The other organization runs while the first is paused, and its
	// pending envelopes are its own to count.
	ran := send2("runs-1", nil)
	waitDone(ran)
	for i := range 3 {
		send2(fmt.Sprintf("waits-%d", i), map[string]any{"approval": "required"})
	}

	// The held job is snoozed by the pause: no call, no attempt spent.
	var j job
	require.Eventually(t, func() bool { j = jobOf(held); return j.heldBy != nil }, 15*time.Second, 20*time.Millisecond)
	require.Equal(t, "scheduled", j.state, j.metadata)
	require.Zero(t, j.attempt, "holding spends no attempt")
	require.True(t, j.heldBy.Equal(pausedAt), "held by %s, paused at %s", j.heldBy, pausedAt)
	require.Equal(t, "approved", status(held))
	require.Zero(t, calls(held))
	require.Equal(t, 1, calls(ran))

	// A held job that comes back while the pause lasts is held again
	// before it takes a token.
	_, err = b.Pool.Exec(ctx, `UPDATE river_job SET state = 'available', scheduled_at = now() WHERE id = (SELECT job_id FROM action_invocations WHERE id = $1)`, held)
	require.NoError(t, err)
	snoozes := j.snoozes
	require.Eventually(t, func() bool { j = jobOf(held); return j.snoozes > snoozes }, 15*time.Second, 20*time.Millisecond)
	require.Equal(t, "scheduled", j.state, j.metadata)
	require.Zero(t, j.attempt)
	require.Zero(t, calls(held))

	// Each organization sees its own counts and pause, nothing of the other.
	q1 := b.Do("GET", "/v1/queues", b.Admin(), nil)
	require.Equal(t, http.StatusOK, q1.Status, string(q1.Raw))
	require.Equal(t, true, q1.Body["paused"])
	states1 := q1.Body["states"].(map[string]any)
	require.Equal(t, float64(1), states1["queued"].(map[string]any)["count"], string(q1.Raw))
	require.Equal(t, float64(0), states1["pending"].(map[string]any)["count"], string(q1.Raw))
	require.NotNil(t, states1["queued"].(map[string]any)["age_seconds"])
	require.Nil(t, states1["pending"].(map[string]any)["oldest_at"])
	q2 := b.Do("GET", "/v1/queues", admin2, nil)
	require.Equal(t, false, q2.Body["paused"], string(q2.Raw))
	states2 := q2.Body["states"].(map[string]any)
	require.Equal(t, float64(3), states2["pending"].(map[string]any)["count"], string(q2.Raw))
	require.Equal(t, float64(0), states2["queued"].(map[string]any)["count"], string(q2.Raw))
	st := b.Do("GET", "/v1/stats", b.Admin(), nil)
	require.Equal(t, http.StatusOK, st.Status, string(st.Raw))
	require.NotContains(t, st.Body, "queues")
	require.Equal(t, q1.Body["states"].(map[string]any)["queued"].(map[string]any)["count"],
		st.Body["queue"].(map[string]any)["states"].(map[string]any)["queued"].(map[string]any)["count"])

	// The other organization's admin resumes its own organization only.
	r = b.Do("POST", "/v1/queues/resume", admin2, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, true, b.Do("GET", "/v1/queues", b.Admin(), nil).Body["paused"])
	require.Equal(t, "scheduled", jobOf(held).state)
	require.Equal(t, "approved", status(held))

	// Resuming releases the held job at once, well before the recheck
	// (a minute by default).
	r = b.Do("POST", "/v1/queues/resume", b.Owner(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, false, r.Body["paused"])
	waitDone(held)
	require.Equal(t, 1, calls(held))
	require.Equal(t, 1, jobOf(held).attempt, "one attempt: the one that ran")
}
