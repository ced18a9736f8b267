package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/apptest"
	"github.com/outboxd/outboxd/internal/pgtest"
)

// TestChaos_KilledWorkerAndPostgresRestart runs an API and two worker
// processes on a private Postgres over a few hundred envelopes, SIGKILLs
// one worker mid-run, then restarts Postgres mid-run. Nothing is lost,
// nothing takes effect twice at the (idempotent) provider, a call that
// completed is never made again — only calls in flight in the killed
// worker are repeated, by its rescue — and the killed worker's jobs are
// back within a minute.
func TestChaos_KilledWorkerAndPostgresRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three outboxd processes and restarts Postgres")
	}
	t.Parallel()
	ctx := context.Background()
	const n = 300

	pg := pgtest.NewPrivate(t)
	dbURL := pg.URL

	prov := newProvider(t, 30*time.Millisecond)
	configPath := filepath.Join(t.TempDir(), "outboxd.yaml")
	require.NoError(t, os.WriteFile(configPath, []byte(`
buckets:
  - name: slack.minute
    rate: 100000
    interval: 1s
    burst: 100000
    scope: org
worker:
  max_workers: 20
  call_timeout: 2s
  poll_interval: 50ms
  bookkeeping_retry: 60s
`), 0o600))
	env := baseEnv(dbURL, prov.URL)
	apiAddr := freeAddr(t)
	api := outboxd(t, env, "serve", "--config", configPath, "--role=api", "--http-addr", apiAddr)
	workers := []*process{
		outboxd(t, env, "serve", "--config", configPath, "--role=worker", "--http-addr", freeAddr(t)),
		outboxd(t, env, "serve", "--config", configPath, "--role=worker", "--http-addr", freeAddr(t)),
	}
	waitReady(t, apiAddr, api)

	b := &apptest.Bundle{T: t, URL: "http://" + apiAddr, Secret: "separate-process-secret-0123"}
	b.StoreSlackToken("xoxb-chaos")
	b.SetModes(map[string]string{"slack:send_message": "allow"})
	for batch := range 3 {
		envs := make([]any, n/3)
		for i := range envs {
			envs[i] = map[string]any{
				"external_id": fmt.Sprintf("chaos-%d-%d", batch, i),
				"tool":        map[string]string{"name": "slack.send_message"},
				"args":        map[string]string{"channel": "C1", "text": fmt.Sprint("message ", i)},
			}
		}
		r := b.Do("POST", "/v1/envelopes/batch", b.Service(), map[string]any{"envelopes": envs})
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	}

	arrived := func() int { a, _, _ := prov.snapshot(); return len(a) }
	require.Eventually(t, func() bool { return arrived() >= n/4 }, 30*time.Second, 10*time.Millisecond, "arrived %d\nworker: %s", arrived(), workers[0].output)
	require.NoError(t, workers[0].cmd.Process.Signal(syscall.SIGKILL))
	_ = workers[0].cmd.Wait()
	killedAt := time.Now()

	require.Eventually(t, func() bool { return arrived() >= n/2 }, 30*time.Second, 10*time.Millisecond)
	require.NoError(t, pg.Stop())
	require.NoError(t, pg.Start())

	check, err := pgxpool.New(ctx, dbURL)
	require.NoError(t, err)
	defer check.Close()
	var completed int
	require.Eventually(t, func() bool {
		err := check.QueryRow(ctx, `SELECT count(*) FROM action_invocations WHERE status = 'completed'`).Scan(&completed)
		return err == nil && completed == n
	}, 90*time.Second, 200*time.Millisecond, "completed %d of %d\nworker: %s", completed, n, workers[1].output)
	recovery := time.Since(killedAt)

	arrivals, keys, _ := prov.snapshot()
	require.Len(t, keys, n, "every invocation reached the provider")
	var repeated int
	for key, calls := range keys {
		require.LessOrEqual(t, calls, 2, "invocation %s called %d times", key, calls)
		if calls == 2 {
			repeated++
			require.True(t, prov.firstCall(key).Before(killedAt), "invocation %s was repeated though its first call came after the SIGKILL", key)
		}
	}
	// Only the killed worker's in-flight calls may run twice: at most its
	// max_workers. The Postgres restart repeats none.
	require.LessOrEqual(t, repeated, 20, "calls repeated")
	t.Logf("%d calls for %d invocations (%d repeated after the SIGKILL); all completed %s after the kill",
		len(arrivals), n, repeated, recovery.Round(time.Second))
	require.Less(t, recovery, 60*time.Second, "a killed worker's jobs run again within a minute")

	api.stop(t)
	workers[1].stop(t)
}
