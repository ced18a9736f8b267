package worker

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

// TestGroupDB: groups run on Deps.Groups, and without it are planned for
// their jobs on DB.
func TestGroupDB(t *testing.T) {
	t.Parallel()
	groups, pool := new(pgxpool.Pool), new(pgxpool.Pool)
	require.Same(t, groups, (&Deps{Pool: pool, Groups: groups}).groupDB())
	custom, ok := (&Deps{Pool: pool}).groupDB().(dbutil.CustomPlans)
	require.True(t, ok, "without Groups a group is planned for its jobs")
	require.Same(t, pool, custom.DBTX)
}

// TestReindexed: River's reindexer is given every river_job index that the
// migrated schema has, and only those: the GIN indexes are gone.
func TestReindexed(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t)
	var indexes []string
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT array_agg(indexname::text ORDER BY indexname) FROM pg_indexes WHERE tablename = 'river_job'`).Scan(&indexes))
	require.NotContains(t, indexes, "river_job_args_index")
	require.NotContains(t, indexes, "river_job_metadata_index")
	require.ElementsMatch(t, indexes, reindexed())
}

// TestFetchCooldown: a queue's fetch cooldown defaults to 25ms, or the
// poll interval if shorter, and may not exceed the poll interval; River's
// client keeps its least, which is how often it may announce inserts.
func TestFetchCooldown(t *testing.T) {
	t.Parallel()
	require.Equal(t, 25*time.Millisecond, (&Config{}).WithDefaults().FetchCooldown)
	require.Equal(t, 10*time.Millisecond, (&Config{PollInterval: 10 * time.Millisecond}).WithDefaults().FetchCooldown)
	require.EqualError(t, (&Config{FetchCooldown: time.Second}).WithDefaults().validate(),
		"worker.fetch_cooldown must be at least 1ms and at most worker.poll_interval")

	rc, err := riverConfig(&Deps{}, &Config{FetchCooldown: 40 * time.Millisecond}, true)
	require.NoError(t, err)
	require.Equal(t, river.FetchCooldownMin, rc.FetchCooldown)
	require.NotEmpty(t, rc.Queues)
	for name, q := range rc.Queues {
		require.Equal(t, 40*time.Millisecond, q.FetchCooldown, name)
	}
}
