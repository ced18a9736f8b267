package migrations_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/platform/pgtest"
	"github.com/outboxd/outboxd/migrations"
)

// TestMigration040_DeadlinesPastYear9999: a must_run_before stored after
// year 9999 (before the API refused it) becomes the latest the API
// accepts, which JSON can answer; the deadlines of other rows are left as
// they were.
func TestMigration040_DeadlinesPastYear9999(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)

	// Down past 040 (and the migrations after it), then up again.
	var since []int // 40 and every migration after it, newest first
	for _, m := range migrations.All() {
		if m.Version >= 40 {
			since = append([]int{m.Version}, since...)
		}
	}
	reverted, err := migrations.Down(ctx, pool, len(since), false)
	require.NoError(t, err)
	require.Equal(t, since, reverted)
	insert := func(deadline string) (id string) {
		t.Helper()
		require.NoError(t, pool.QueryRow(ctx, `
INSERT INTO action_invocations (organization_id, requested_by, origin, integration, action, risk_level,
    mode, mode_source, params, params_hash, status, must_run_before)
VALUES ('org-1', 'test', 'envelope', 'demo', 'act', 'low', 'allow', 'default', '{}', 'h', 'approved', $1::timestamptz)
RETURNING id::text`, deadline).Scan(&id))
		return id
	}
	far := insert("10000-01-01 00:00:00+00")
	farther := insert("20000-06-01 12:00:00+00")
	near := insert("2099-12-31 18:00:00+00")

	applied, err := migrations.Up(ctx, pool)
	require.NoError(t, err)
	slices.Reverse(since)
	require.Equal(t, since, applied)
	deadline := func(id string) time.Time {
		t.Helper()
		var d time.Time
		require.NoError(t, pool.QueryRow(ctx, `SELECT must_run_before FROM action_invocations WHERE id = $1::uuid`, id).Scan(&d))
		return d.UTC()
	}
	latest := time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
	require.Equal(t, latest, deadline(far))
	require.Equal(t, latest, deadline(farther))
	require.Equal(t, time.Date(2099, 12, 31, 18, 0, 0, 0, time.UTC), deadline(near))
}
