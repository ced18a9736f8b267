package migrations_test

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
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

// TestMigration044_AuditListingIndexes: 044 adds the audit trail's
// indexes by target and by actor; its down part drops them, and up again
// adds them.
func TestMigration044_AuditListingIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	indexes := func() []string {
		t.Helper()
		rows, err := pool.Query(ctx, `SELECT indexdef FROM pg_indexes
			WHERE tablename = 'audit_entries' AND indexname IN ('audit_entries_org_target', 'audit_entries_org_actor')
			ORDER BY indexname`)
		require.NoError(t, err)
		defs, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		return defs
	}
	want := []string{
		"CREATE INDEX audit_entries_org_actor ON public.audit_entries USING btree (organization_id, actor_subject, seq)",
		"CREATE INDEX audit_entries_org_target ON public.audit_entries USING btree (organization_id, target_type, target_id, seq)",
	}
	require.Equal(t, want, indexes())

	var since []int // 44 and every migration after it, newest first
	for _, m := range migrations.All() {
		if m.Version >= 44 {
			since = append([]int{m.Version}, since...)
		}
	}
	reverted, err := migrations.Down(ctx, pool, len(since), false)
	require.NoError(t, err)
	require.Equal(t, since, reverted)
	require.Empty(t, indexes())

	applied, err := migrations.Up(ctx, pool)
	require.NoError(t, err)
	slices.Reverse(since)
	require.Equal(t, since, applied)
	require.Equal(t, want, indexes())
}
