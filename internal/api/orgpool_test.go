package api_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
)

// TestOrgPoolShare_OneOrganizationCannotHoldEveryConnection: the API's
// requests share one pool of database connections. An organization whose
// requests wait inside the database (here its audited changes, which take
// turns on its audit chain's lock, as a burst of concurrent changes does)
// holds one connection each; without a per-organization share, enough of
// them hold the whole pool and another organization's requests wait for a
// connection as long as the first organization's do. With the share, the
// first organization's extra requests wait for their own share, another
// organization is answered, and no request is refused.
func TestOrgPoolShare_OneOrganizationCannotHoldEveryConnection(t *testing.T) {
	// Org-1's requests wait for one of its connections, and for its chain,
	// for as long as this test holds it, on a busy machine too.
	b := apptest.Start(t, &apptest.Options{OrgConnWait: 5 * time.Minute, StatementTimeout: 5 * time.Minute})
	ctx := context.Background()
	poolSize := int(b.Pool.Config().MaxConns) // the tenant pool is at most this

	// Hold org-1's audit chain, as a long change of its own would: its
	// changes wait for it (the first) or for each other (the rest, on the
	// lock of its modes), each on a connection.
	lock, err := b.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = lock.Rollback(ctx) }()
	_, err = lock.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('outboxd.audit:' || $1::text, 0))`, apptest.Org)
	require.NoError(t, err)

	// Twice as many of org-1's changes as there are connections.
	owner := b.Owner()
	var wg sync.WaitGroup
	statuses := make(chan int, 2*poolSize)
	for range 2 * poolSize {
		wg.Go(func() {
			r := b.Do("PUT", "/v1/action-modes", owner, map[string]string{"slack:send_message": "allow"})
			statuses <- r.Status
		})
	}
	waiting := func() int {
		return countRows(t, b, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`)
	}
	deadline := time.Now().Add(20 * time.Second)
	for waiting() < poolSize-1 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	require.GreaterOrEqual(t, waiting(), poolSize-1, "org-1's changes did not reach the database")
	// Let the rest of org-1's requests reach the pool too.
	time.Sleep(500 * time.Millisecond)

	// Another organization's read and change are answered meanwhile.
	other := b.Token(auth.Claims{Org: "org-2", Kind: auth.KindUser, Role: auth.RoleOwner})
	reqCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	resp, _, err := b.Client(other).Do(reqCtx, "GET", "/v1/invocations", nil, nil)
	require.NoError(t, err, "org-2 waited for org-1's connections")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, _, err = b.Client(other).Do(reqCtx, "PUT", "/v1/action-modes", []byte(`{"slack:send_message":"deny"}`),
		http.Header{"Content-Type": {"application/json"}})
	require.NoError(t, err, "org-2 waited for org-1's connections")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Less(t, waiting(), poolSize, "org-1 holds every connection of the API's pool")

	// Org-1's changes all go through once its chain is free: none was
	// refused for waiting on its share.
	require.NoError(t, lock.Rollback(ctx))
	wg.Wait()
	close(statuses)
	for status := range statuses {
		require.Equal(t, http.StatusOK, status)
	}
}
