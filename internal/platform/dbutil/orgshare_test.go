package dbutil_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

// TestShareByOrg: an organization holding its share of a tenant pool
// waits for one of its own connections, however many the pool has left;
// another organization, and work of none, still get one at once; a
// connection released (or a transaction ended) gives its slot back.
func TestShareByOrg(t *testing.T) {
	ctx := context.Background()
	cfg := pgtest.Pool(t).Config().Copy()
	cfg.MaxConns = 4
	dbutil.ShareByOrg(cfg, dbutil.OrgShare(cfg.MaxConns), 0)
	require.Equal(t, 3, dbutil.OrgShare(cfg.MaxConns))
	pool, err := dbutil.TenantPool(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	a, b := dbutil.WithOrg(ctx, "org-a"), dbutil.WithOrg(ctx, "org-b")
	// org-a's share: two connections and a transaction.
	c1, err := pool.Acquire(a)
	require.NoError(t, err)
	c2, err := pool.Acquire(a)
	require.NoError(t, err)
	tx, err := pool.Begin(a)
	require.NoError(t, err)
	got := make(chan *pgxpool.Conn, 1)
	// A failure below leaves nothing held (pool.Close would wait for it).
	t.Cleanup(func() {
		_ = tx.Rollback(ctx)
		c1.Release()
		c2.Release()
		if c := <-got; c != nil {
			c.Release()
		}
	})

	// org-a's next acquire waits for its share, not for the pool, which
	// still has a connection.
	go func() {
		c, err := pool.Acquire(a)
		if err != nil {
			t.Error(err)
		}
		got <- c
	}()
	short, cancel := context.WithTimeout(a, 200*time.Millisecond)
	extra, err := pool.Acquire(short)
	if err == nil {
		extra.Release()
	}
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "org-a got a connection past its share")

	// org-b gets the last connection (without the share, org-a's waiting
	// acquire has it, and org-b waits until org-a lets one go).
	bCtx, cancel := context.WithTimeout(b, 10*time.Second)
	defer cancel()
	var n int
	bErr := pool.QueryRow(bCtx, "SELECT 1").Scan(&n)

	// A transaction's end gives its slot back: the waiting acquire of
	// org-a gets it.
	require.NoError(t, tx.Commit(ctx))
	c4 := <-got
	got <- nil // for the cleanup
	c1.Release()
	c2.Release()
	require.NoError(t, bErr, "org-b waited for org-a's connections")
	require.NotNil(t, c4)
	c4.Release()

	// Every slot is back: org-a may hold its whole share again.
	var held []*pgxpool.Conn
	for range 3 {
		c, err := pool.Acquire(a)
		require.NoError(t, err)
		held = append(held, c)
	}
	for _, c := range held {
		c.Release()
	}
}
