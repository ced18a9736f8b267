package feed

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

// TestFeed_OneOrganizationsReadsLeaveThePoolToOthers: an organization's
// stream reads that cannot finish (here: held by a lock on the events)
// hold at most a quarter of the pool; another request still gets a
// connection. Before, its streams' reads took every connection of the pool
// (each stream reads when its doorbell rings, all at once), and every other
// organization's requests waited for them.
func TestFeed_OneOrganizationsReadsLeaveThePoolToOthers(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	s := New(&Deps{Pool: pool, Listeners: pool})

	// A lock no read of the events gets past until the test lets go.
	locker, err := pgxpool.New(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(locker.Close)
	tx, err := locker.Begin(context.Background())
	require.NoError(t, err)
	_, err = tx.Exec(context.Background(), "LOCK TABLE invocation_events IN ACCESS EXCLUSIVE MODE")
	require.NoError(t, err)
	released := false
	unlock := func() {
		if !released {
			released = true
			require.NoError(t, tx.Rollback(context.Background()))
		}
	}
	t.Cleanup(unlock)

	ctx, cancel := context.WithCancel(context.Background())
	const streams = 6
	ended := make(chan error, streams)
	for range streams {
		go func() {
			_, _, err := s.Feed(ctx, &Params{Org: "org-busy", Limit: 100})
			ended <- err
		}()
	}
	t.Cleanup(func() {
		cancel()
		unlock()
		for range streams {
			<-ended
		}
	})
	waiting := func() int {
		var n int
		require.NoError(t, locker.QueryRow(context.Background(), `SELECT count(*) FROM pg_locks
			WHERE relation = 'invocation_events'::regclass AND NOT granted`).Scan(&n))
		return n
	}
	require.Eventually(t, func() bool { return waiting() >= 1 }, 10*time.Second, 10*time.Millisecond)

	// Another organization's request finds a connection.
	actx, acancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer acancel()
	conn, err := pool.Acquire(actx)
	require.NoError(t, err, "the busy organization's reads hold the whole pool (%d reads waiting on the lock)", waiting())
	conn.Release()
	require.Equal(t, 1, waiting(), "a quarter of a pool of 4")

	// Once the lock goes, every read finishes.
	unlock()
	for range streams {
		require.NoError(t, <-ended)
		ended <- nil
	}
}
