package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors/slack/slacktest"
	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

// provider is a loopback Slack (slacktest, which keeps the messages) that
// records when each post arrived, how many ran at once, and the
// idempotency keys it saw. Look-ups (conversations.history) reach Slack
// without being counted as calls.
type provider struct {
	*httptest.Server
	slack *slacktest.Server
	delay time.Duration

	mu       sync.Mutex
	arrivals []time.Time
	keys     map[string]int
	inFlight int
	maxIn    int
}

func newProvider(t *testing.T, delay time.Duration) *provider {
	p := &provider{slack: slacktest.New(t), delay: delay, keys: map[string]int{}}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/chat.postMessage") {
			p.slack.ServeHTTP(w, r)
			return
		}
		p.mu.Lock()
		p.arrivals = append(p.arrivals, time.Now())
		key := r.Header.Get("X-Outboxd-Idempotency-Key")
		p.keys[key]++
		p.inFlight++
		p.maxIn = max(p.maxIn, p.inFlight)
		p.mu.Unlock()
		time.Sleep(p.delay)
		p.mu.Lock()
		p.inFlight--
		p.mu.Unlock()
		p.slack.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *provider) snapshot() ([]time.Time, map[string]int, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	keys := make(map[string]int, len(p.keys))
	for k, v := range p.keys {
		keys[k] = v
	}
	return append([]time.Time(nil), p.arrivals...), keys, p.maxIn
}

// TestFlow_MultiProcessRateBucket runs one API and three worker processes on
// one Postgres against a bucket of rate R: the provider must see at most R
// per second (and at least half of it), never more than burst + R in any second, never more than
// max_concurrency at once, and every invocation exactly once in effect —
// also after one worker is killed with SIGKILL mid-run.
func TestFlow_MultiProcessRateBucket(t *testing.T) {
	if testing.Short() {
		t.Skip("runs four outboxd processes for about a minute")
	}
	t.Parallel()
	const (
		rate      = 10
		burst     = 5
		maxInFlow = 5
		jobs      = rate*10 + 30
	)
	prov := newProvider(t, 50*time.Millisecond)
	dir := t.TempDir()
	configPath := filepath.Join(dir, "outboxd.yaml")
	require.NoError(t, os.WriteFile(configPath, []byte(fmt.Sprintf(`
buckets:
  - name: test.bucket
    rate: %d
    interval: 1s
    burst: %d
    max_concurrency: %d
    scope: global
  # The envelopes name test.bucket; they take Slack's own bucket too,
  # made wide here so that test.bucket alone holds them back.
  - name: slack.minute
    rate: 1000
    interval: 1s
    burst: 1000
    scope: org
shutdown_timeout: 10s
worker:
  max_workers: 20
  call_timeout: 1s
  rescue_after: 7s
  retry_base_delay: 200ms
  poll_interval: 50ms
`, rate, burst, maxInFlow)), 0o600))

	env := baseEnv(pgtest.URL(t), prov.URL)
	apiAddr := freeAddr(t)
	api := outboxd(t, env, "serve", "--config", configPath, "--role=api", "--http-addr", apiAddr)
	var workers []*process
	for range 3 {
		w := outboxd(t, env, "serve", "--config", configPath, "--role=worker", "--http-addr", freeAddr(t))
		workers = append(workers, w)
	}
	waitReady(t, apiAddr, api)

	b := &apptest.Bundle{T: t, URL: "http://" + apiAddr, Secret: "separate-process-secret-0123"}
	b.StoreSlackToken("xoxb-flow")
	b.SetModes(map[string]string{"slack:send_message": "allow"})
	enqueue := func(prefix string, n int) []string {
		ids := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := b.Do("POST", "/v1/envelopes", b.Service(), map[string]any{
					"external_id": fmt.Sprintf("%s-%d", prefix, i),
					"tool":        map[string]string{"source": "slack", "action": "send_message"},
					"args":        map[string]string{"channel": "C1", "text": fmt.Sprint("message ", i)},
					"constraints": map[string]any{"rate_bucket": "test.bucket"},
				})
				require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
				ids[i] = r.Body["action_id"].(string)
			}()
		}
		wg.Wait()
		return ids
	}
	waitCompleted := func(ids []string, timeout time.Duration) {
		deadline := time.Now().Add(timeout)
		for _, id := range ids {
			for {
				inv := b.Invocation(id)
				if inv["status"] == "completed" {
					break
				}
				require.NotEqual(t, "failed", inv["status"], "invocation %s failed: %v", id, inv["error"])
				if time.Now().After(deadline) {
					t.Fatalf("invocation %s is %v after %s\napi: %s", id, inv["status"], timeout, api.output)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}

	// Phase 1: all three workers, a burst of more than R×10 jobs.
	ids := enqueue("steady", jobs)
	waitCompleted(ids, 60*time.Second)
	arrivals, keys, maxIn := prov.snapshot()
	require.Len(t, arrivals, jobs, "one call per invocation")
	for _, id := range ids {
		require.Equal(t, 1, keys[id], "invocation %s called exactly once", id)
	}
	require.LessOrEqual(t, maxIn, maxInFlow, "max_concurrency holds across processes")

	sort.Slice(arrivals, func(i, j int) bool { return arrivals[i].Before(arrivals[j]) })
	span := arrivals[len(arrivals)-1].Sub(arrivals[0]).Seconds()
	observed := float64(jobs-burst) / span
	t.Logf("observed %.2f calls/s for a bucket of %d/s (%d calls over %.2fs, max %d in flight)", observed, rate, jobs, span, maxIn)
	// The bucket's promise is an upper bound: never faster than R (+10 %
	// for the measure's ends). How close to R the workers come is
	// throughput, which a loaded CI machine lowers (8.9/s once, with the
	// race detector and the other packages' tests beside four outboxd
	// processes on two cores): a lower bound of R/2 still catches a bucket
	// that grants too little, and the benchmark measures the rest.
	require.LessOrEqual(t, observed, rate*1.10, "never faster than R")
	require.GreaterOrEqual(t, observed, rate*0.5, "not throttled far below R")
	// The bucket grants at most burst + R tokens in any second; calls reach
	// the provider a variable time after their token (the first ones of a
	// process also open connections and read the credential), which can
	// bring calls granted up to a fifth of a second apart into one second.
	for i, start := range arrivals {
		n := 0
		for _, a := range arrivals[i:] {
			if a.Sub(start) >= time.Second {
				break
			}
			n++
		}
		require.LessOrEqual(t, n, burst+rate+rate/5+1, "calls in the second starting at call %d", i)
	}

	// Phase 2: SIGKILL one worker mid-run. Its running jobs are rescued, its
	// concurrency leases expire, and every invocation still completes.
	ids = enqueue("killed", 60)
	require.Eventually(t, func() bool {
		arrivals, _, _ := prov.snapshot()
		return len(arrivals) >= jobs+15
	}, 30*time.Second, 20*time.Millisecond)
	require.NoError(t, workers[0].cmd.Process.Signal(syscall.SIGKILL))
	_ = workers[0].cmd.Wait()
	waitCompleted(ids, 90*time.Second)
	_, keys, maxIn = prov.snapshot()
	for _, id := range ids {
		require.GreaterOrEqual(t, keys[id], 1, "invocation %s reached the provider", id)
		require.LessOrEqual(t, keys[id], 2, "at most the killed attempt and its rescue")
	}
	require.LessOrEqual(t, maxIn, maxInFlow)

	api.stop(t)
	workers[1].stop(t)
	workers[2].stop(t)
}
