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

// TestBoundStatements: a statement of a bounded pool that runs past the
// bound (a long one, or one waiting for a lock another transaction holds)
// is cut with 57014 (TimedOut), and the pool's connections stay usable; the pool it was copied from is not
// bounded. Without the bound, the API's statements ran as long as they
// took, each holding a connection of the API's pool.
func TestBoundStatements(t *testing.T) {
	ctx := context.Background()
	base := pgtest.Pool(t)
	cfg := base.Config()
	dbutil.BoundStatements(cfg, 200*time.Millisecond)
	pool, err := dbutil.TenantPool(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	org := dbutil.WithOrg(ctx, "org-a")

	// A long statement is cut, as the tenant role too.
	_, err = pool.Exec(org, `SELECT pg_sleep(20)`)
	require.Error(t, err, "a 20 s statement ran to its end")
	require.True(t, dbutil.TimedOut(err), "%v", err)
	require.False(t, dbutil.Unavailable(err), "a statement cut is no outage")

	// So is a wait for a lock another transaction holds.
	lock, err := base.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = lock.Rollback(ctx) })
	_, err = lock.Exec(ctx, `SELECT pg_advisory_xact_lock(4242)`)
	require.NoError(t, err)
	_, err = pool.Exec(org, `SELECT pg_advisory_xact_lock(4242)`)
	require.True(t, dbutil.TimedOut(err), "%v", err)
	require.NoError(t, lock.Rollback(ctx))

	// The pool still answers, with the bound on every connection.
	var setting string
	require.NoError(t, pool.QueryRow(org, `SELECT current_setting('statement_timeout')`).Scan(&setting))
	require.Equal(t, "200ms", setting)
	// The pool copied from is not bounded.
	require.NoError(t, base.QueryRow(ctx, `SELECT current_setting('statement_timeout')`).Scan(&setting))
	require.Equal(t, "0", setting)
	_, err = base.Exec(ctx, `SELECT pg_sleep(0.5)`)
	require.NoError(t, err)
}

// TestShareByOrg_WaitEnds: an acquire past its organization's share
// waits at most the share's wait, even with a context that never ends (an
// HTTP request's), and then fails with ErrOrgBusy; its organization's
// next acquire, once one of its connections is back, gets one. Without
// the wait it waited as long as its context.
func TestShareByOrg_WaitEnds(t *testing.T) {
	ctx := context.Background()
	cfg := pgtest.Pool(t).Config()
	cfg.MaxConns = 4
	dbutil.ShareByOrg(cfg, 2, 300*time.Millisecond)
	pool, err := dbutil.TenantPool(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	a := dbutil.WithOrg(ctx, "org-a")

	var held []*pgxpool.Conn
	t.Cleanup(func() {
		for _, c := range held {
			c.Release()
		}
	})
	for range 2 {
		c, err := pool.Acquire(a)
		require.NoError(t, err)
		held = append(held, c)
	}

	// Run in the background so that a wait that never ends fails the
	// test instead of hanging it.
	done := make(chan error, 1)
	go func() {
		_, err := pool.Exec(a, `SELECT 1`)
		done <- err
	}()
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("an acquire past its organization's share was still waiting after a minute")
	}
	require.ErrorIs(t, err, dbutil.ErrOrgBusy)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	// Another organization is not held up, and org-a gets a connection
	// once one of its own is back.
	_, err = pool.Exec(dbutil.WithOrg(ctx, "org-b"), `SELECT 1`)
	require.NoError(t, err)
	held[0].Release()
	held = held[1:]
	_, err = pool.Exec(a, `SELECT 1`)
	require.NoError(t, err)
}
