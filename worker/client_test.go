package worker

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/dbsqlc"
	"github.com/outboxd/outboxd/internal/dbutil"
)

// TestGroupDB: small groups run on Deps.Groups, larger ones, and all of
// them without it, are planned for their jobs on DB.
func TestGroupDB(t *testing.T) {
	t.Parallel()
	groups, pool := new(pgxpool.Pool), new(pgxpool.Pool)
	d := &Deps{Pool: pool, Groups: groups}
	require.Same(t, groups, d.groupDB(1))
	require.Same(t, groups, d.groupDB(maxIndexGroup))
	for _, planned := range []dbsqlc.DBTX{d.groupDB(maxIndexGroup + 1), (&Deps{Pool: pool}).groupDB(1)} {
		custom, ok := planned.(dbutil.CustomPlans)
		require.True(t, ok, "a large group, and every group without Groups, is planned for its jobs")
		require.Same(t, pool, custom.DBTX)
	}
}
