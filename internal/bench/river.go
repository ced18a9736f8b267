package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/outboxd/outboxd/executors/httpsource"
)

// noopArgs is River's baseline: a job that does nothing.
type noopArgs struct {
	Num int `json:"num"`
}

func (noopArgs) Kind() string { return "bench_noop" }

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
	// call, when set, is made by every job.
	call func(context.Context) error
}

func (w noopWorker) Work(ctx context.Context, _ *river.Job[noopArgs]) error {
	if w.call == nil {
		return nil
	}
	return w.call(ctx)
}

// riverRaw measures River alone as its own benchmark does: no-op jobs
// (--river-n, at least N) inserted first, then worked by many workers with
// a short fetch cooldown, from the client's start until the last
// completion. With call, each job instead posts a message to a loopback
// Slack of its own through a provider client (httpsource.NewClient), as
// every outboxd action does: River and the one HTTP exchange no action can
// do without, the most any outboxd path could reach on this machine.
func (b *runner) riverRaw(ctx context.Context, call bool) (*phaseResult, error) {
	n := max(b.cfg.N, b.cfg.RiverN)
	name, worker := "River raw (no-op jobs)", noopWorker{}
	if call {
		slack := newLoopbackSlack()
		defer slack.server.Close()
		name, worker.call = "River + provider call", postMessage(slack.server.URL+"/api/chat.postMessage")
	}
	b.settle(ctx)
	x0, err := b.xacts(ctx)
	if err != nil {
		return nil, err
	}
	resetPeakRSS()
	cfg, err := pgxpool.ParseConfig(b.dbURL)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = riverRawConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	ws := river.NewWorkers()
	river.AddWorker(ws, worker)
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		FetchCooldown:     2 * time.Millisecond,
		FetchPollInterval: 20 * time.Millisecond,
		Queues:            map[string]river.QueueConfig{"bench_noop": {MaxWorkers: b.cfg.RiverWorkers}},
		Workers:           ws,
		Logger:            slog.New(slog.DiscardHandler),
	})
	if err != nil {
		pool.Close()
		return nil, err
	}
	for done := 0; done < n; {
		params := make([]river.InsertManyParams, min(5000, n-done))
		for i := range params {
			params[i] = river.InsertManyParams{Args: noopArgs{Num: done + i}, InsertOpts: &river.InsertOpts{Queue: "bench_noop"}}
		}
		if _, err := client.InsertMany(ctx, params); err != nil {
			pool.Close()
			return nil, err
		}
		done += len(params)
	}
	b.analyze(ctx, "river_job")
	events, cancel := client.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: n + 100,
		Kinds:    []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled},
	})
	defer cancel()
	cpu0, pg0 := b.cpuUsed()
	start := time.Now()
	if err := client.Start(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	var total time.Duration
	for worked := 0; worked < n; worked++ {
		select {
		case e := <-events:
			if e.Kind != river.EventKindJobCompleted {
				err = fmt.Errorf("no-op job %d ended %s", e.Job.ID, e.Kind)
			}
		case <-time.After(time.Minute):
			err = fmt.Errorf("only %d of %d no-op jobs completed", worked, n)
		}
		if err != nil {
			break
		}
		total = time.Since(start)
	}
	cpu1, pg1 := b.cpuUsed()
	rss := peakRSS()
	_ = client.Stop(context.WithoutCancel(ctx))
	pool.Close() // flushes its connections' statistics
	if err != nil {
		return nil, err
	}
	b.settle(ctx)
	x1, err := b.xacts(ctx)
	if err != nil {
		return nil, err
	}
	return &phaseResult{
		name: name, actions: n, total: total, xacts: x1 - x0, peakRSSkB: rss, river: !call,
		cpu: cpu1 - cpu0, pgCPU: cpuDelta(pg0, pg1),
	}, nil
}

// postMessage returns a call posting a message to url through a provider
// client, as the Slack source does, and reading the answer.
func postMessage(url string) func(context.Context) error {
	client := httpsource.NewClient()
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"channel":"C1","text":"bench"}`))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json; charset=utf-8")
		req.Header.Set("Authorization", "Bearer xoxb-bench")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("loopback Slack answered %s", resp.Status)
		}
		return nil
	}
}

// riverRawConns is the River baseline's pool: its no-op jobs never touch
// the database, so only River's fetches and completions need connections.
const riverRawConns = 20
