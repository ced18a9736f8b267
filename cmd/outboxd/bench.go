package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/spf13/cobra"

	"github.com/outboxd/outboxd/internal/app"
	"github.com/outboxd/outboxd/internal/auth"
	"github.com/outboxd/outboxd/internal/flow"
	"github.com/outboxd/outboxd/internal/pglaunch"
	"github.com/outboxd/outboxd/internal/secretbox"
	"github.com/outboxd/outboxd/migrations"
	"github.com/outboxd/outboxd/worker"
)

func newBenchCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the real pipeline against River's raw throughput",
		Long: `bench sends N allow-mode envelopes through the whole path — HTTP, the
enqueue transaction, River, a loopback Slack, the completing transaction —
and reports throughput and enqueue-to-completed latency. In the same run it
measures River alone working N no-op jobs on the same database and prints
the ratio. It uses a scratch database on DATABASE_URL's server when set,
otherwise an embedded Postgres in a temporary directory.`,
		Args: cobra.NoArgs,
		RunE: runBench,
	}
	cmd.Flags().Int("n", 2000, "envelopes (and no-op jobs) to run")
	cmd.Flags().Int("concurrency", 32, "concurrent HTTP clients")
	cmd.Flags().Int("workers", 50, "River workers (worker.max_workers)")
	return cmd
}

func runBench(cmd *cobra.Command, _ []string) error {
	ctx := cmd.Context()
	v, err := loadConfig(cmd)
	if err != nil {
		return err
	}
	n, _ := cmd.Flags().GetInt("n")
	concurrency, _ := cmd.Flags().GetInt("concurrency")
	workers, _ := cmd.Flags().GetInt("workers")
	if n < 1 || concurrency < 1 || workers < 1 {
		return fmt.Errorf("--n, --concurrency and --workers must be positive")
	}
	out := cmd.OutOrStdout()

	dbURL, cleanup, err := benchDatabase(ctx, v.GetString("database.url"))
	if err != nil {
		return err
	}
	defer cleanup()
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	if _, err := migrations.Up(ctx, pool); err != nil {
		return err
	}

	slackSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true,"channel":"C1","ts":"1503435956.000247"}`)
	}))
	defer slackSrv.Close()

	cfg := &app.Config{
		HTTPAddr: "127.0.0.1:0", JWTSecret: secretbox.NewKey(), SecretsKey: secretbox.NewKey(),
		SlackBaseURL: slackSrv.URL, ShutdownTimeout: 30 * time.Second,
		Worker: worker.Config{MaxWorkers: workers},
		// Measure the pipeline, not Slack's rate limit: the bucket is
		// acquired on every job but never runs dry.
		Buckets: []flow.BucketConfig{{Name: "slack.minute", Rate: 1_000_000, Interval: time.Second, Burst: 1_000_000, Scope: flow.ScopeOrg}},
	}
	a, err := app.New(cfg, app.RoleAll, pool, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- a.Serve(runCtx, ln, nil) }()
	defer func() { stop(); <-served }()
	base := "http://" + ln.Addr().String()

	const org = "bench-org"
	mint := func(c auth.Claims) string {
		c.Org = org
		t, _ := auth.Mint(cfg.JWTSecret, c, time.Hour)
		return t
	}
	owner := mint(auth.Claims{Kind: auth.KindUser, Role: auth.RoleOwner, RegisteredClaims: jwt.RegisteredClaims{Subject: "bench-owner"}})
	service := mint(auth.Claims{Kind: auth.KindService, RegisteredClaims: jwt.RegisteredClaims{Subject: "bench"}})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: concurrency}}
	call := func(method, path, token string, body any) (int, error) {
		raw, _ := json.Marshal(body)
		req, _ := http.NewRequestWithContext(ctx, method, base+path, bytes.NewReader(raw))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if code, err := call("PUT", "/v1/credentials/slack", owner, map[string]string{"token": "xoxb-bench"}); err != nil || code != 200 {
		return fmt.Errorf("storing the bench credential: %d %v", code, err)
	}
	if code, err := call("PUT", "/v1/action-modes", owner, map[string]string{"slack:send_message": "allow"}); err != nil || code != 200 {
		return fmt.Errorf("allowing send_message: %d %v", code, err)
	}

	fmt.Fprintf(out, "outboxd bench: %d envelopes, %d HTTP clients, %d workers\n", n, concurrency, workers)
	start := time.Now()
	var next, failed atomic.Int64
	var wg sync.WaitGroup
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				code, err := call("POST", "/v1/envelopes", service, map[string]any{
					"external_id": fmt.Sprintf("bench-%d", i),
					"tool":        map[string]string{"source": "slack", "action": "send_message"},
					"args":        map[string]string{"channel": "C1", "text": fmt.Sprintf("bench message %d", i)},
				})
				if err != nil || code != http.StatusCreated {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	enqueued := time.Since(start)
	if f := failed.Load(); f > 0 {
		return fmt.Errorf("%d envelopes were not accepted", f)
	}
	if err := waitFor(ctx, pool, `SELECT count(*) FROM action_invocations WHERE status = 'completed'`, n); err != nil {
		return err
	}
	total := time.Since(start)
	rows, err := pool.Query(ctx, `SELECT extract(epoch FROM completed_at - created_at) FROM action_invocations WHERE status = 'completed'`)
	if err != nil {
		return err
	}
	latencies, err := pgx.CollectRows(rows, pgx.RowTo[float64])
	if err != nil {
		return err
	}
	slices.Sort(latencies)
	pipelineRate := float64(n) / total.Seconds()
	fmt.Fprintf(out, "pipeline: enqueued in %s (%.0f/s); all completed in %s: %.0f actions/s\n",
		enqueued.Round(time.Millisecond), float64(n)/enqueued.Seconds(), total.Round(time.Millisecond), pipelineRate)
	fmt.Fprintf(out, "latency enqueue→completed: p50 %s  p99 %s  max %s\n",
		seconds(percentile(latencies, 0.50)), seconds(percentile(latencies, 0.99)), seconds(latencies[len(latencies)-1]))

	riverRate, err := benchRiver(ctx, pool, n, workers)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "river no-op jobs: %.0f jobs/s\n", riverRate)
	fmt.Fprintf(out, "pipeline / river: %.2f\n", pipelineRate/riverRate)
	return nil
}

// noopArgs is River's baseline: a job that does nothing.
type noopArgs struct{}

func (noopArgs) Kind() string { return "bench_noop" }

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
}

func (noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

// benchRiver measures River alone: n no-op jobs inserted in batches, worked
// by the same number of workers on the same database.
func benchRiver(ctx context.Context, pool *pgxpool.Pool, n, workers int) (float64, error) {
	ws := river.NewWorkers()
	river.AddWorker(ws, noopWorker{})
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Queues:  map[string]river.QueueConfig{"bench_noop": {MaxWorkers: workers}},
		Workers: ws,
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := client.Start(ctx); err != nil {
		return 0, err
	}
	defer func() { _ = client.Stop(context.WithoutCancel(ctx)) }()
	for done := 0; done < n; {
		batch := min(500, n-done)
		params := make([]river.InsertManyParams, batch)
		for i := range params {
			params[i] = river.InsertManyParams{Args: noopArgs{}, InsertOpts: &river.InsertOpts{Queue: "bench_noop"}}
		}
		if _, err := client.InsertMany(ctx, params); err != nil {
			return 0, err
		}
		done += batch
	}
	if err := waitFor(ctx, pool, `SELECT count(*) FROM river_job WHERE kind = 'bench_noop' AND state = 'completed'`, n); err != nil {
		return 0, err
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

func waitFor(ctx context.Context, pool *pgxpool.Pool, query string, want int) error {
	deadline := time.Now().Add(10 * time.Minute)
	for {
		var got int
		if err := pool.QueryRow(ctx, query).Scan(&got); err != nil {
			return err
		}
		if got >= want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d finished in time", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// benchDatabase returns a scratch database: a new one on the server of
// serverURL, or on an embedded Postgres when serverURL is empty.
func benchDatabase(ctx context.Context, serverURL string) (string, func(), error) {
	name := "outboxd_bench_" + randomHex(4)
	if serverURL == "" {
		dir, err := os.MkdirTemp("", "outboxd-bench-")
		if err != nil {
			return "", nil, err
		}
		_ = os.Chmod(dir, 0o755)
		pg, err := pglaunch.Start(ctx, &pglaunch.Config{DataDir: dir + "/pg"})
		if err != nil {
			os.RemoveAll(dir)
			return "", nil, err
		}
		if err := pg.CreateDatabase(ctx, name); err != nil {
			return "", nil, err
		}
		return pg.URL(name), func() {
			_ = pg.Stop(context.Background())
			_ = pg.RemoveData()
			os.RemoveAll(dir)
		}, nil
	}
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return "", nil, err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", nil, fmt.Errorf("creating a scratch database (the role needs CREATEDB): %w", err)
	}
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", nil, err
	}
	u.Path = "/" + name
	return u.String(), func() {
		c, err := pgx.Connect(context.Background(), serverURL)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			c.Close(context.Background())
		}
	}, nil
}

func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

func seconds(s float64) time.Duration {
	return time.Duration(s * float64(time.Second)).Round(100 * time.Microsecond)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
