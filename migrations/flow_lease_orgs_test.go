package migrations_test

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/platform/pgtest"
	"github.com/outboxd/outboxd/migrations"
)

// TestMigration047_FlowLeaseOrgs: 047 gives every bucket row, existing
// ones included, an empty map of its leases' organizations; its down part
// drops it, keeping the rows and their leases; up again adds it back,
// empty.
func TestMigration047_FlowLeaseOrgs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	var since []int // 47 and every migration after it, newest first
	for _, m := range migrations.All() {
		if m.Version >= 47 {
			since = append([]int{m.Version}, since...)
		}
	}
	reverted, err := migrations.Down(ctx, pool, len(since), false)
	require.NoError(t, err)
	require.Equal(t, since, reverted)
	_, err = pool.Exec(ctx, `INSERT INTO flow_buckets (name, scope_key, tokens, refilled_at, leases)
		VALUES ('plugin', '', 3, now(), '{"job:1": "2999-01-01T00:00:00Z"}')`)
	require.NoError(t, err)

	applied, err := migrations.Up(ctx, pool)
	require.NoError(t, err)
	slices.Reverse(since)
	require.Equal(t, since, applied)
	var orgs string
	require.NoError(t, pool.QueryRow(ctx, `SELECT lease_orgs::text FROM flow_buckets WHERE name = 'plugin'`).Scan(&orgs))
	require.Equal(t, "{}", orgs)
	_, err = pool.Exec(ctx, `UPDATE flow_buckets SET lease_orgs = '{"job:1": "acme"}'`)
	require.NoError(t, err)

	slices.Reverse(since)
	_, err = migrations.Down(ctx, pool, len(since), false)
	require.NoError(t, err)
	var leases int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM flow_buckets, jsonb_object_keys(leases) WHERE name = 'plugin'`).Scan(&leases))
	require.Equal(t, 1, leases, "the row keeps its lease")
	var pgErr *pgconn.PgError
	_, err = pool.Exec(ctx, `SELECT lease_orgs FROM flow_buckets`)
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "42703", pgErr.Code, "undefined_column")
	_, err = migrations.Up(ctx, pool)
	require.NoError(t, err)
}
