package migrations_test

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/platform/pgtest"
	"github.com/outboxd/outboxd/migrations"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestMigration024_OneRelay: the notice column names each event's notice;
// the relay cursors survive a round trip down to the two tables of
// before and up again; the API role cannot read them.
func TestMigration024_OneRelay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)

	notice := func(typ, to string) *string {
		t.Helper()
		var n *string
		require.NoError(t, pool.QueryRow(ctx, `INSERT INTO invocation_events (invocation_id, organization_id, seq, type, to_status)
			VALUES ($1, 'org-1', 1, $2, $3) RETURNING notice`, uuid.New(), typ, to).Scan(&n))
		return n
	}
	for _, c := range []struct{ typ, to, want string }{
		{"created", "pending", "action_approval_request"}, {"created", "approved", ""}, {"started", "executing", ""},
		{"approved", "approved", "action_approval_result"}, {"denied", "denied", "action_approval_result"},
		{"expired", "expired", "action_approval_result"}, {"completed", "completed", "action_completed"},
		{"failed", "failed", "action_completed"}, {"skipped", "skipped", "action_completed"},
		{"cancelled", "cancelled", "action_completed"}, {"retry_scheduled", "approved", ""},
	} {
		got := notice(c.typ, c.to)
		if c.want == "" {
			require.Nil(t, got, c.typ)
		} else {
			require.NotNil(t, got, c.typ)
			require.Equal(t, c.want, *got, c.typ)
		}
	}

	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM relay_cursors WHERE consumer IN ('webhook', 'slack')`).Scan(&n))
	require.Equal(t, 2, n, "the two relays' cursors moved in")
	_, err := pool.Exec(ctx, `UPDATE relay_cursors SET after_xid = '5', after_id = 7 WHERE consumer = 'webhook'`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE relay_cursors SET after_xid = '6', after_id = 8 WHERE consumer = 'slack'`)
	require.NoError(t, err)

	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SET LOCAL ROLE outboxd_tenant`)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `SELECT * FROM relay_cursors`)
	require.ErrorContains(t, err, "permission denied")
	require.NoError(t, tx.Rollback(ctx))

	// Down past 024 (and the migrations after it), then up again.
	var since []int // 24 and every migration after it, newest first
	for _, m := range migrations.All() {
		if m.Version >= 24 {
			since = append([]int{m.Version}, since...)
		}
	}
	reverted, err := migrations.Down(ctx, pool, len(since), false)
	require.NoError(t, err)
	require.Equal(t, since, reverted)
	var xid, id int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT after_xid::text::bigint, after_id FROM webhook_relay`).Scan(&xid, &id))
	require.Equal(t, [2]int64{5, 7}, [2]int64{xid, id})
	require.NoError(t, pool.QueryRow(ctx, `SELECT after_xid::text::bigint, after_id FROM slack_relay`).Scan(&xid, &id))
	require.Equal(t, [2]int64{6, 8}, [2]int64{xid, id})
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.columns
		WHERE table_name = 'invocation_events' AND column_name = 'notice'`).Scan(&n))
	require.Zero(t, n)

	applied, err := migrations.Up(ctx, pool)
	require.NoError(t, err)
	slices.Reverse(since)
	require.Equal(t, since, applied)
	require.NoError(t, pool.QueryRow(ctx, `SELECT after_xid::text::bigint, after_id FROM relay_cursors WHERE consumer = 'webhook'`).Scan(&xid, &id))
	require.Equal(t, [2]int64{5, 7}, [2]int64{xid, id})
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM invocation_events WHERE notice IS NOT NULL`).Scan(&n))
	require.Equal(t, 8, n, "the notices written before are computed again")
}
