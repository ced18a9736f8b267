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

// An invocation whose job River gave up on before any attempt reached the
// provider (each attempt failed before the call: the database unreachable,
// a source's action list unavailable to the do-not-contact check) is
// failed saying nothing was done, not that the provider may have acted,
// which sent an operator to check a provider that was never called.
func TestSweep_OrphanThatNeverStartedSaysNothingWasDone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupUnit(t)
	never, job := b.approved(t, nil)
	_, err := b.tx.Exec(ctx, `UPDATE river_job SET state = 'discarded', finalized_at = now() WHERE id = $1`, job.ID)
	require.NoError(t, err)
	// One that started and ended in a retry, then ran out of attempts,
	// may have acted.
	started, job := b.approved(t, nil)
	_, err = b.store.Start(ctx, b.tx, started.ID, 1)
	require.NoError(t, err)
	_, err = b.store.ScheduleRetry(ctx, b.tx, started.ID, "timeout: no answer", nil, false)
	require.NoError(t, err)
	_, err = b.tx.Exec(ctx, `UPDATE river_job SET state = 'discarded', finalized_at = now() WHERE id = $1`, job.ID)
	require.NoError(t, err)

	_, err = worker.Sweep(ctx, b.tx, b.store, b.metrics, slog.New(slog.DiscardHandler))
	require.NoError(t, err)

	got, err := b.store.Get(ctx, b.tx, "org-1", never.ID)
	require.NoError(t, err)
	require.Equal(t, invocation.StatusFailed, got.Status)
	require.NotNil(t, got.DeadLetteredAt)
	require.Contains(t, *got.Error, "nothing was done")
	require.NotContains(t, *got.Error, "may have acted")

	got, err = b.store.Get(ctx, b.tx, "org-1", started.ID)
	require.NoError(t, err)
	require.Equal(t, invocation.StatusFailed, got.Status)
	require.Contains(t, *got.Error, "may have acted")
	require.Empty(t, b.slack.Requests())
}
