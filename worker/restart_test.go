package worker_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

// TestExecute_OutcomeSurvivesPostgresRestart restarts Postgres while
// provider calls are in flight: the calls that completed are recorded once
// the database is back, and none is made twice.
func TestExecute_OutcomeSurvivesPostgresRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pg := pgtest.NewPrivate(t)

	const n = 8
	var (
		mu        sync.Mutex
		restarted bool
		arrived   int
		release   = make(chan struct{})
		back      = make(chan error, 1)
	)
	b := apptest.Start(t, &apptest.Options{DatabaseURL: pg.URL, SlackFunc: func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrived++
		last := arrived == n && !restarted
		if last {
			restarted = true
		}
		mu.Unlock()
		if last {
			// Every call is in flight: take Postgres down under them, then
			// answer them all while it is down.
			go func() {
				err := pg.Stop()
				if err == nil {
					close(release)
					time.Sleep(2 * time.Second)
					err = pg.Start()
				}
				back <- err
			}()
		}
		select {
		case <-release:
		case <-time.After(30 * time.Second):
		}
		apptest.SlackOK(w, r)
	}})
	allowSlack(b)
	ids := make([]string, n)
	for i := range n {
		ids[i] = enqueue(t, b, "restart-"+string(rune('a'+i)))
	}
	require.NoError(t, <-back)

	require.Eventually(t, func() bool {
		var done int
		err := b.Pool.QueryRow(ctx, `SELECT count(*) FROM action_invocations WHERE status = 'completed'`).Scan(&done)
		return err == nil && done == n
	}, 60*time.Second, 200*time.Millisecond)
	calls := map[string]int{}
	for _, req := range b.Slack.Requests() {
		calls[req.IdempotencyKey]++
	}
	require.Len(t, calls, n)
	for key, c := range calls {
		require.Equal(t, 1, c, "invocation %s was called %d times", key, c)
	}
}
