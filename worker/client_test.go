package worker

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
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
