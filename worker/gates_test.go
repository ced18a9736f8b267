package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/invocation"
)

// counter reads a counter's value.
func counter(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, c.Write(&m))
	return m.GetCounter().GetValue()
}

// retried records an approved invocation whose first attempt started and
// ended in a retry (the provider may have acted: a lost answer), then
// moves its deadline to deadline; nothingDone says the attempt's refusal
// did nothing (executors.Error.NotDone).
func (b *unitBundle) retried(t *testing.T, deadline time.Time, nothingDone bool) (invocation.Invocation, *rivertype.JobRow) {
	t.Helper()
	ctx := context.Background()
	inv, job := b.approved(t, nil)
	_, err := b.store.Start(ctx, b.tx, inv.ID, 1)
	require.NoError(t, err)
	_, err = b.store.ScheduleRetry(ctx, b.tx, inv.ID, "timeout: no answer", nil, nothingDone)
	require.NoError(t, err)
	_, err = b.tx.Exec(ctx, `UPDATE action_invocations SET must_run_before = $2 WHERE id = $1`, inv.ID, deadline)
	require.NoError(t, err)
	return inv, job
}

// A gate that refuses an invocation an earlier attempt started does not
// call it skipped (nothing happened), which may be false: it fails, a
// dead letter saying the provider may have acted. Before, a retry whose
// must_run_before had passed was skipped.
func TestExecuteWorker_GateAfterAnAttempt(t *testing.T) {
	t.Parallel()

	t.Run("MustRunBeforePassedFails", func(t *testing.T) {
		t.Parallel()
		b := setupUnit(t)
		inv, job := b.retried(t, time.Now().Add(-time.Minute), false)
		res, got := b.work(t, job)
		require.Equal(t, rivertype.JobStateCancelled, res.Job.State, "never run again")
		require.Equal(t, invocation.StatusFailed, got.Status)
		require.NotNil(t, got.DeadLetteredAt)
		require.Contains(t, *got.Error, "outcome_unknown")
		require.Contains(t, *got.Error, "must_run_before")
		require.Contains(t, *got.Error, "may have acted")
		require.Equal(t, []invocation.EventType{"created", "started", "retry_scheduled", "failed"}, b.timeline(t, inv.ID))
		require.Empty(t, b.slack.Requests())
		require.Equal(t, 1.0, counter(t, b.metrics.GateSkips.WithLabelValues("must_run_before")))
	})
	t.Run("DoNotContactFails", func(t *testing.T) {
		t.Parallel()
		b := setupUnit(t)
		_, job := b.retried(t, time.Now().Add(time.Hour), false)
		_, err := b.tx.Exec(context.Background(), `INSERT INTO do_not_contact (organization_id, pattern, created_by) VALUES ('org-1', 'C01*', 'ops')`)
		require.NoError(t, err)
		_, got := b.work(t, job)
		require.Equal(t, invocation.StatusFailed, got.Status)
		require.Contains(t, *got.Error, "do-not-contact")
		require.Contains(t, *got.Error, "may have acted")
		require.Empty(t, b.slack.Requests())
		require.Equal(t, 1.0, counter(t, b.metrics.GateSkips.WithLabelValues("do_not_contact")))
	})
	t.Run("NothingDoneIsSkipped", func(t *testing.T) {
		t.Parallel()
		b := setupUnit(t)
		// The attempt's refusal did nothing: skipped stays true.
		_, job := b.retried(t, time.Now().Add(-time.Minute), true)
		res, got := b.work(t, job)
		require.Equal(t, river.EventKindJobCompleted, res.EventKind)
		require.Equal(t, invocation.StatusSkipped, got.Status)
		require.Empty(t, b.slack.Requests())
	})
}

// Quiet hours and gate skips are counted, as ops watch them.
func TestExecuteWorker_GateMetrics(t *testing.T) {
	t.Parallel()

	t.Run("QuietHoursHold", func(t *testing.T) {
		t.Parallel()
		b := setupUnit(t)
		b.quietHours(t, 60, 60)
		_, job := b.approved(t, nil)
		res, _ := b.work(t, job)
		require.Equal(t, river.EventKindJobSnoozed, res.EventKind)
		require.Equal(t, 1.0, counter(t, b.metrics.QuietHoursHolds))
		require.Zero(t, counter(t, b.metrics.GateSkips.WithLabelValues("must_run_before")))
		require.Zero(t, counter(t, b.metrics.GateSkips.WithLabelValues("do_not_contact")))
	})
	t.Run("MustRunBeforeSkip", func(t *testing.T) {
		t.Parallel()
		b := setupUnit(t)
		past := time.Now().Add(-time.Minute)
		_, job := b.approved(t, func(p *invocation.CreateParams) { p.MustRunBefore = &past })
		_, got := b.work(t, job)
		require.Equal(t, invocation.StatusSkipped, got.Status)
		require.Equal(t, 1.0, counter(t, b.metrics.GateSkips.WithLabelValues("must_run_before")))
		require.Zero(t, counter(t, b.metrics.QuietHoursHolds))
	})
}

// Quiet hours that end after an invocation's must_run_before hold it only
// until the deadline, when it is skipped: the automation learns then that
// it will not run. Before, it stayed approved until the window ended
// (hours, for a night's window), to be skipped only then.
func TestExecuteWorker_QuietHoursHoldNoLongerThanTheDeadline(t *testing.T) {
	t.Parallel()
	b := setupUnit(t)
	b.quietHours(t, 60, 120)
	deadline := time.Now().Add(2 * time.Minute)
	inv, job := b.approved(t, func(p *invocation.CreateParams) { p.MustRunBefore = &deadline })
	res, got := b.work(t, job)
	require.Equal(t, river.EventKindJobSnoozed, res.EventKind)
	require.Equal(t, invocation.StatusApproved, got.Status)
	require.False(t, res.Job.ScheduledAt.Before(deadline), "back at %s, deadline %s", res.Job.ScheduledAt, deadline)
	require.True(t, res.Job.ScheduledAt.Before(deadline.Add(time.Minute)), "back at %s, not when the window ends", res.Job.ScheduledAt)

	// Back after its deadline, it is skipped.
	_, err := b.tx.Exec(context.Background(), `UPDATE action_invocations SET must_run_before = now() - interval '1 second' WHERE id = $1`, inv.ID)
	require.NoError(t, err)
	_, got = b.work(t, res.Job)
	require.Equal(t, invocation.StatusSkipped, got.Status)
	require.Empty(t, b.slack.Requests())
}
