package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors/slack/slacktest"
	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

// TestChaos_KilledWorkerAndPostgresRestart runs an API and two worker
// processes on a private Postgres over a few hundred envelopes, against a
// faulty Slack that loses the answer of every fifth post (it stores the
// message, then stalls past the call timeout), SIGKILLs one worker
// mid-run, then restarts Postgres mid-run. Nothing is lost, Slack holds
// exactly one message per envelope (each retry finds the message its
// earlier attempt posted, by the key in its metadata, instead of posting
// again), and the killed worker's jobs are back within a minute.
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
	var posts, stalled atomic.Int32
	prov.slack.AfterPost(func(slacktest.Message) slacktest.Fault {
		if posts.Add(1)%5 == 0 {
			stalled.Add(1)
			return slacktest.Stall
		}
		return slacktest.Answer
	})
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
	messages := map[string]int{}
	for _, m := range prov.slack.Messages() {
		require.NotNil(t, m.Metadata, "message %s carries its invocation's key", m.TS)
		var payload struct {
			IdempotencyKey string `json:"idempotency_key"`
		}
		require.NoError(t, json.Unmarshal(m.Metadata.EventPayload, &payload))
		messages[payload.IdempotencyKey]++
	}
	require.Len(t, messages, n, "a message for every envelope")
	for key, count := range messages {
		require.Equal(t, 1, count, "invocation %s has %d messages", key, count)
		require.Equal(t, 1, keys[key], "invocation %s was posted %d times", key, keys[key])
	}
	lookups := len(prov.slack.Calls("conversations.history"))
	require.Positive(t, stalled.Load(), "some answers were lost")
	require.GreaterOrEqual(t, lookups, int(stalled.Load()), "every lost answer was followed by a look-up")
	t.Logf("%d posts for %d invocations (%d answers lost, %d look-ups), one message each; all completed %s after the kill",
		len(arrivals), n, stalled.Load(), lookups, recovery.Round(time.Second))
	require.Less(t, recovery, 60*time.Second, "a killed worker's jobs run again within a minute")

	api.stop(t)
	workers[1].stop(t)
}
