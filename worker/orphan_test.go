package worker_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"

	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/worker"
)

// panicSource panics in Execute, as a source with a bug would.
type panicSource struct{}

func (panicSource) ID() string { return "panicky" }

func (panicSource) ListActions(context.Context, executors.ExecContext) ([]executors.Definition, error) {
	return nil, nil
}

func (panicSource) Execute(context.Context, string, json.RawMessage, executors.ExecContext) (executors.Result, error) {
	panic("boom")
}

// TestSweep_FailsWhatRiverGaveUpOn: a job whose last attempt ends without
// the worker recording an outcome (a panic here; a process killed
// mid-attempt, whose job River's rescuer discards, alike) is discarded by
// River while its invocation stays executing. The sweep fails it, a dead
// letter an operator can replay, and leaves the dead letters the worker
// recorded itself as they are.
func TestSweep_FailsWhatRiverGaveUpOn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupUnitWith(t, panicSource{}, nil)
	lastAttempt := &invocation.Retry{MaxAttempts: 1}

	orphan, job := b.approved(t, func(p *invocation.CreateParams) {
		p.Integration, p.Action, p.Retry = "panicky", "do", lastAttempt
	})
	res, got := b.work(t, job)
	require.Equal(t, rivertype.JobStateDiscarded, res.Job.State)
	require.Equal(t, invocation.StatusExecuting, got.Status, "nothing recorded the outcome")

	b.slack.SetHandler(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
	deadLetter, job := b.approved(t, func(p *invocation.CreateParams) { p.Retry = lastAttempt })
	res, got = b.work(t, job)
	require.Equal(t, rivertype.JobStateDiscarded, res.Job.State)
	require.Equal(t, invocation.StatusFailed, got.Status)
	recorded := *got.Error

	_, err := worker.Sweep(ctx, b.tx, b.store, b.metrics, slog.New(slog.DiscardHandler))
	require.NoError(t, err)

	got, err = b.store.Get(ctx, b.tx, "org-1", orphan.ID)
	require.NoError(t, err)
	require.Equal(t, invocation.StatusFailed, got.Status)
	require.NotNil(t, got.DeadLetteredAt, "a dead letter, which can be replayed")
	require.Contains(t, *got.Error, "attempts_exhausted")
	require.Equal(t, []invocation.EventType{"created", "started", "failed"}, b.timeline(t, orphan.ID))

	got, err = b.store.Get(ctx, b.tx, "org-1", deadLetter.ID)
	require.NoError(t, err)
	require.Equal(t, recorded, *got.Error, "the worker's own error is kept")
	require.Equal(t, []invocation.EventType{"created", "started", "failed"}, b.timeline(t, deadLetter.ID))

	// Sweeping again changes nothing.
	_, err = worker.Sweep(ctx, b.tx, b.store, b.metrics, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.Equal(t, []invocation.EventType{"created", "started", "failed"}, b.timeline(t, orphan.ID))
}
