package worker_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/invocation"
)

// heldBy returns the pause (its paused_at) that holds invocation id's
// job, nil when none does (not held, or not yet).
func heldBy(t *testing.T, b *apptest.Bundle, id string) *time.Time {
	t.Helper()
	var at *time.Time
	require.NoError(t, b.Pool.QueryRow(context.Background(), `SELECT CASE WHEN j.state = 'scheduled' THEN (j.metadata->>'org_paused_at')::timestamptz END
		FROM river_job j JOIN action_invocations i ON i.job_id = j.id WHERE i.id = $1`, id).Scan(&at))
	return at
}

// pauseOrg pauses apptest.Org and returns when its pause began.
func pauseOrg(t *testing.T, b *apptest.Bundle) time.Time {
	t.Helper()
	r := b.Do("POST", "/v1/queues/pause", b.Admin(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	at, err := time.Parse(time.RFC3339Nano, r.Body["paused_at"].(string))
	require.NoError(t, err)
	return at
}

// heldJob pauses apptest.Org, enqueues an envelope and waits until the
// pause holds its job (snoozed for worker.pause_recheck, its default
// minute), and returns the invocation and the pause.
func heldJob(t *testing.T, b *apptest.Bundle, externalID string) (string, time.Time) {
	t.Helper()
	pausedAt := pauseOrg(t, b)
	id := enqueue(t, b, externalID)
	require.Eventually(t, func() bool {
		at := heldBy(t, b, id)
		return at != nil && at.Equal(pausedAt)
	}, 15*time.Second, 20*time.Millisecond, "the pause holds the job")
	return id, pausedAt
}

// endPauseUnreleased ends apptest.Org's pause as a resume would, but
// without releasing the jobs it held: what a resume leaves of a job whose
// worker was holding it as the resume committed. River writes the hold's
// snooze after the worker returns, so after the resume's release: the
// job stayed snoozed for the whole worker.pause_recheck.
func endPauseUnreleased(t *testing.T, b *apptest.Bundle) {
	t.Helper()
	tag, err := b.Pool.Exec(context.Background(), `DELETE FROM org_pauses WHERE organization_id = $1`, apptest.Org)
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected())
}

// A job held as its organization's pause ended runs within seconds, not
// after worker.pause_recheck (a minute by default, which this test keeps):
// the pause watch releases it. Before, it waited the minute.
func TestExecute_HeldAsThePauseEndedRunsAtOnce(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	allowSlack(b)
	id, _ := heldJob(t, b, "held-as-resumed")

	endPauseUnreleased(t, b)
	b.WaitStatus(id, invocation.StatusCompleted, 20*time.Second)
	require.Eventually(t, func() bool { state, _ := jobRow(t, b, id); return state == "completed" }, 10*time.Second, 20*time.Millisecond)
	_, attempt := jobRow(t, b, id)
	require.Equal(t, 1, attempt, "held without spending an attempt, then run once")
}

// A job held by a pause that ended while its organization was paused
// again is released, and held by the new pause: it does not run.
func TestExecute_HeldAsThePauseEndedIsHeldByTheNextPause(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	allowSlack(b)
	id, first := heldJob(t, b, "held-by-next")

	endPauseUnreleased(t, b)
	second := pauseOrg(t, b)
	require.True(t, second.After(first))
	require.Eventually(t, func() bool {
		at := heldBy(t, b, id)
		return at != nil && at.Equal(second)
	}, 20*time.Second, 20*time.Millisecond, "the next pause holds the job")
	require.Equal(t, string(invocation.StatusApproved), b.Invocation(id)["status"])
	for _, r := range b.Slack.Requests() {
		require.NotEqual(t, "/chat.postMessage", r.Path, "a paused organization's job ran")
	}
}
