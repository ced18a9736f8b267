package worker_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/slack"
	"github.com/outboxd/outboxd/internal/domain/flow"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
	"github.com/outboxd/outboxd/worker"
)

// A job's concurrency slot in a global bucket counts against its
// organization's share of the bucket (three quarters): with its
// organization holding 3 of 4 slots, the job snoozes, spending no token,
// and runs once one of them is released. Before, the worker named no
// organization for a global bucket and the job took the last slot, so one
// organization could hold every slot of the plugin bucket.
func TestExecuteWorker_GlobalBucketOrgShare(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupUnit(t)
	pool := pgtest.Pool(t)
	limiter, err := flow.New(pool, &flow.Config{Buckets: []flow.BucketConfig{
		{Name: "test.global", Rate: 1, Interval: time.Hour, Burst: 10, MaxConcurrency: 4},
	}, LeaseTTL: time.Hour})
	require.NoError(t, err)
	src, err := slack.New(&slack.Config{BaseURL: b.slack.Server.URL})
	require.NoError(t, err)
	w := worker.NewExecuteWorker(&worker.Deps{
		Pool: pool, DB: b.tx, Sources: registrySources{executors.NewRegistry(src)}, Tokens: b.creds, Box: b.box,
		Metrics: b.metrics, Flow: limiter,
	}, &worker.Config{RetryBaseDelay: time.Second})
	runner := rivertest.NewWorker(t, riverpgxv5.New(pool), &river.Config{}, w)

	var held []*flow.Lease
	for i := range 3 {
		g, err := limiter.Acquire(ctx, "test.global", "org-1", "other:"+strconv.Itoa(i))
		require.NoError(t, err)
		require.True(t, g.Granted())
		held = append(held, g.Lease)
	}
	_, job := b.approved(t, func(p *invocation.CreateParams) { p.RateBucket = "test.global" })
	res, err := runner.WorkJob(ctx, t, b.tx, job)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, res.EventKind, "org-1 holds its 3 of the 4 slots")
	require.Empty(t, b.slack.Requests())
	var tokens float64
	require.NoError(t, pool.QueryRow(ctx, `SELECT tokens FROM flow_buckets WHERE name = 'test.global'`).Scan(&tokens))
	require.InDelta(t, 10-3, tokens, 0.01, "the snoozed job took no token")

	require.NoError(t, limiter.Release(ctx, held[0]))
	_, job = b.approved(t, func(p *invocation.CreateParams) { p.RateBucket = "test.global" })
	res, err = runner.WorkJob(ctx, t, b.tx, job)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	require.Len(t, b.slack.Requests(), 1)
}
