package retention_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/retention/retentionstore"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

// BenchmarkPurgeRiverJobs purges the River jobs of an organization with
// 20,000 and 200,000 invocations, each with a job that names only its
// invocation (as Slack's approval jobs do), among another organization's,
// 1,000 per batch, and reports the first, middle and last batch's time: a
// batch should cost the same at the start and at the end of the purge, and
// in a large organization as in a small one.
//
//	go test ./internal/domain/retention/ -run '^$' -bench PurgeRiverJobs -benchtime 1x
func BenchmarkPurgeRiverJobs(b *testing.B) {
	for _, n := range []int{20_000, 200_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) { benchmarkPurgeRiverJobs(b, n) })
	}
}

func benchmarkPurgeRiverJobs(b *testing.B, n int) {
	b.StopTimer()
	ctx := context.Background()
	pool := pgtest.Pool(b)
	const batch = 1000
	for range b.N {
		// The first table is River's, whose Delete walks the jobs once.
		table := retentionstore.New().PurgeTables(nil)[0]
		require.Equal(b, "river_job", table.Name)
		for _, org := range []string{"big", "other"} {
			_, err := pool.Exec(ctx, `
WITH inv AS (
    INSERT INTO action_invocations (organization_id, requested_by, origin, integration, action, risk_level,
        mode, mode_source, params, params_hash, status)
    SELECT $1, 'test', 'invoke', 'demo', 'act', 'low', 'allow', 'default', '{}', 'h', 'completed'
    FROM generate_series(1, $2) RETURNING id
)
INSERT INTO river_job (args, kind, max_attempts)
SELECT jsonb_build_object('invocation_id', id), 'slack_post_approval', 5 FROM inv`, org, map[string]int{"big": n, "other": n / 20}[org])
			require.NoError(b, err)
		}
		_, err := pool.Exec(ctx, `VACUUM ANALYZE river_job`)
		require.NoError(b, err)
		_, err = pool.Exec(ctx, `ANALYZE action_invocations`)
		require.NoError(b, err)
		b.StartTimer()
		var times []time.Duration
		var deleted int64
		for {
			start := time.Now()
			d, more, err := table.Delete(ctx, pool, "big", batch)
			require.NoError(b, err)
			times = append(times, time.Since(start))
			deleted += d
			if !more {
				break
			}
		}
		b.StopTimer()
		require.EqualValues(b, n, deleted)
		b.ReportMetric(float64(times[0].Microseconds())/1000, "ms/first-batch")
		// The last batch that read any job: the final one finds none.
		b.ReportMetric(float64(times[len(times)-2].Microseconds())/1000, "ms/last-batch")
		b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "ms/middle-batch")
		b.ReportMetric(float64(slices.Max(times).Microseconds())/1000, "ms/slowest-batch")
		b.ReportMetric(float64(len(times)), "batches")
		_, err = pool.Exec(ctx, `TRUNCATE river_job; DELETE FROM action_invocations WHERE organization_id IN ('big', 'other')`)
		require.NoError(b, err)
	}
}
