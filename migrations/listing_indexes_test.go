package migrations_test

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/platform/pgtest"
	"github.com/outboxd/outboxd/migrations"
)

// TestMigration043_ListingIndexes: 043 gives the listing indexes the
// order's tie-breaker and the invocations' the filtered columns; its down
// part gives back the indexes it replaced, and up again the new ones.
func TestMigration043_ListingIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	def := func(name string) string {
		t.Helper()
		var d string
		require.NoError(t, pool.QueryRow(ctx, `SELECT pg_get_indexdef($1::regclass)`, name).Scan(&d))
		return d
	}
	const (
		created     = "CREATE INDEX action_invocations_org_created ON public.action_invocations USING btree (organization_id, created_at DESC, id) INCLUDE (status, integration, origin, automation_id)"
		deadLetters = "CREATE INDEX action_invocations_dead_letters ON public.action_invocations USING btree (organization_id, dead_lettered_at DESC, id) WHERE ((dead_lettered_at IS NOT NULL) AND (discarded_at IS NULL))"
	)
	require.Equal(t, created, def("action_invocations_org_created"))
	require.Equal(t, deadLetters, def("action_invocations_dead_letters"))

	var since []int // 43 and every migration after it, newest first
	for _, m := range migrations.All() {
		if m.Version >= 43 {
			since = append([]int{m.Version}, since...)
		}
	}
	reverted, err := migrations.Down(ctx, pool, len(since), false)
	require.NoError(t, err)
	require.Equal(t, since, reverted)
	require.Equal(t, "CREATE INDEX action_invocations_org_created ON public.action_invocations USING btree (organization_id, created_at DESC)",
		def("action_invocations_org_created"))
	require.Equal(t, "CREATE INDEX action_invocations_dead_letters ON public.action_invocations USING btree (organization_id, dead_lettered_at DESC) WHERE ((dead_lettered_at IS NOT NULL) AND (discarded_at IS NULL))",
		def("action_invocations_dead_letters"))

	applied, err := migrations.Up(ctx, pool)
	require.NoError(t, err)
	slices.Reverse(since)
	require.Equal(t, since, applied)
	require.Equal(t, created, def("action_invocations_org_created"))
	require.Equal(t, deadLetters, def("action_invocations_dead_letters"))
}
