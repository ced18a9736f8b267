package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/riverqueue/river"
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

// Quiet hours and gate skips are counted, as ops watch them.
func TestExecuteWorker_GateMetrics(t *testing.T) {
	t.Parallel()

	t.Run("QuietHoursHold", func(t *testing.T) {
		t.Parallel()
		b := setupUnit(t)
		now := time.Now().UTC()
		minute := now.Hour()*60 + now.Minute()
		_, err := b.tx.Exec(context.Background(), `INSERT INTO quiet_hours (organization_id, bucket, time_zone, start_minute, end_minute, updated_by)
			VALUES ('org-1', '', 'UTC', $1, $2, 'ops')`, (minute+1440-60)%1440, (minute+60)%1440)
		require.NoError(t, err)
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
