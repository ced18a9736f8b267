package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/spf13/cobra"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/httpsource"
	"github.com/outboxd/outboxd/executors/slack"
	"github.com/outboxd/outboxd/internal/app"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/flow"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/platform/pglaunch"
	"github.com/outboxd/outboxd/internal/platform/secretbox"
	"github.com/outboxd/outboxd/migrations"
	"github.com/outboxd/outboxd/worker"
)

func newBenchCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure outboxd's paths against River's raw throughput, in one run on one database",
		Long: `bench measures, on one scratch database, one phase after another:

  1. River raw: --river-n (at least N) pre-inserted no-op jobs worked by
     --river-workers workers with a short fetch cooldown, the way River's
     own benchmark runs; then the same jobs each posting a message to a
     loopback Slack (River + provider call: the most an outboxd path can
     reach here; --skip river-call leaves it out);
  2. single: N allow-mode envelopes, one POST /v1/envelopes each, from
     --concurrency HTTP clients, executed on a loopback Slack;
  3. batch: N envelopes through POST /v1/envelopes/batch, --batch-size each;
  4. slow provider: the single path against a Slack answering after
     --provider-latency (0 skips it);
  5. offered rate: N single envelopes sent at --offered-rate per second
     (open loop: each at its time, whether or not the earlier ones were
     answered; 0 skips it), for the latency at a given load, after a
     second's worth that warms the pool and is left out of p50/p99;
  6. approval: --approvals require_approval envelopes approved one at a
     time on an idle queue, timed from the approve response to the call
     reaching Slack;
  7. with --backlog B: B envelopes left queued (their jobs scheduled an hour
     ahead, as a rate bucket's snooze leaves them), then single and batch
     again.

Each phase reports actions/s (first request to last completion), its ratio
to River raw, enqueue→completed p50/p99, Postgres transactions per action
(pg_stat_database of the bench database; every phase starts and ends with
the pool's connections closed so their counts are flushed) and the peak RSS
of this process during the phase (which also runs the HTTP clients and the
loopback Slack). The database is a new one on DATABASE_URL's server when
set, otherwise an embedded Postgres in a temporary directory.`,
		Args: cobra.NoArgs,
		RunE: runBench,
	}
	cmd.Flags().Int("n", 2000, "actions per phase (and River's no-op jobs)")
	cmd.Flags().Int("concurrency", 64, "concurrent HTTP clients of the single-envelope phases")
	cmd.Flags().Int("workers", 0, "worker.max_workers of outboxd (default: the configured value)")
	cmd.Flags().Int("river-workers", 1000, "MaxWorkers of the River raw phase")
	cmd.Flags().Int("river-n", 20000, "no-op jobs of the River raw phase, at least --n (a phase of a fraction of a second would measure mostly its own start)")
	cmd.Flags().Int("batch-size", 1000, "envelopes per batch request (at most 1000)")
	cmd.Flags().Duration("provider-latency", 150*time.Millisecond, "how long the loopback Slack takes to answer in the slow-provider phase (0 skips it)")
	cmd.Flags().Int("offered-rate", 500, "envelopes per second of the offered-rate phase (0 skips it)")
	cmd.Flags().Int("approvals", 20, "require_approval invocations approved one by one (0 skips the phase)")
	cmd.Flags().Int("backlog", 0, "envelopes left queued before the single and batch phases are run again (0 skips it)")
	cmd.Flags().StringSlice("skip", nil, "phases to leave out: single, batch, river-call (the other phases are left out by their flag's 0)")
	cmd.Flags().String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	cmd.Flags().String("memprofile", "", "write a profile of the whole run's allocations to this file")
	// Only the test shortens it, trading exact transaction counts for time.
	cmd.Flags().Duration("stats-settle", 1500*time.Millisecond, "wait before waking listeners to flush their statistics")
	_ = cmd.Flags().MarkHidden("stats-settle")
	return cmd
}

// benchFlags are the command's settings.
type benchFlags struct {
	n, concurrency, workers, riverWorkers, riverN, batchSize, approvals, backlog, offeredRate int
	providerLatency, statsSettle                                                              time.Duration
	skipSingle, skipBatch, skipRiverCall                                                      bool
}

func runBench(cmd *cobra.Command, _ []string) error {
	ctx := cmd.Context()
	v, err := loadConfig(cmd)
	if err != nil {
		return err
	}
	var f benchFlags
	flags := cmd.Flags()
	f.n, _ = flags.GetInt("n")
	f.concurrency, _ = flags.GetInt("concurrency")
	f.workers, _ = flags.GetInt("workers")
	f.riverWorkers, _ = flags.GetInt("river-workers")
	f.riverN, _ = flags.GetInt("river-n")
	f.batchSize, _ = flags.GetInt("batch-size")
	f.approvals, _ = flags.GetInt("approvals")
	f.backlog, _ = flags.GetInt("backlog")
	f.offeredRate, _ = flags.GetInt("offered-rate")
	f.providerLatency, _ = flags.GetDuration("provider-latency")
	f.statsSettle, _ = flags.GetDuration("stats-settle")
	skip, _ := flags.GetStringSlice("skip")
	for _, phase := range skip {
		switch phase {
		case "single":
			f.skipSingle = true
		case "batch":
			f.skipBatch = true
		case "river-call":
			f.skipRiverCall = true
		default:
			return fmt.Errorf("--skip: unknown phase %q (single, batch or river-call)", phase)
		}
	}
	if f.workers == 0 {
		f.workers = v.GetInt("worker.max_workers")
	}
	switch {
	case f.n < 1 || f.concurrency < 1 || f.workers < 1 || f.riverWorkers < 1 || f.riverN < 0:
		return errors.New("--n, --concurrency, --workers and --river-workers must be positive, --river-n not negative")
	case f.batchSize < 1 || f.batchSize > 1000:
		return errors.New("--batch-size must be between 1 and 1000")
	case f.approvals < 0 || f.backlog < 0 || f.providerLatency < 0 || f.offeredRate < 0:
		return errors.New("--approvals, --backlog, --provider-latency and --offered-rate must not be negative")
	}
	if path, _ := flags.GetString("cpuprofile"); path != "" {
		out, err := os.Create(path)
		if err != nil {
			return err
		}
		defer out.Close()
		if err := pprof.StartCPUProfile(out); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if path, _ := flags.GetString("memprofile"); path != "" {
		defer func() {
			if err := writeAllocs(path); err != nil {
				fmt.Fprintln(cmd.ErrOrStderr(), "outboxd bench: writing the allocation profile:", err)
			}
		}()
	}

	dbURL, monitorURL, pgPID, cleanup, err := benchDatabase(ctx, v.GetString("database.url"))
	if err != nil {
		return err
	}
	defer cleanup()
	// outboxd's own warnings and errors go to stderr; --log-level shows more.
	if f := cmd.Flag("log-level"); (f == nil || !f.Changed) && os.Getenv("OUTBOXD_LOG_LEVEL") == "" {
		v.Set("log.level", "warn")
	}
	logger, err := newLogger(v, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	configured, err := appConfig(v)
	if err != nil {
		return err
	}
	b := &bench{flags: f, worker: configured.Worker, out: cmd.OutOrStdout(), dbURL: dbURL, pgPID: pgPID, logger: logger}
	b.worker.MaxWorkers = f.workers
	if err := b.open(ctx, monitorURL); err != nil {
		return err
	}
	defer b.close()

	var results []*phaseResult
	add := func(r *phaseResult, err error) error {
		if err != nil {
			return err
		}
		results = append(results, r)
		return nil
	}
	if err := add(b.riverRaw(ctx, false)); err != nil {
		return fmt.Errorf("river raw: %w", err)
	}
	if !f.skipRiverCall {
		if err := add(b.riverRaw(ctx, true)); err != nil {
			return fmt.Errorf("river with a provider call: %w", err)
		}
	}
	size, _, err := servingPoolSize(v.GetInt("database.max_conns"), dbURL, app.RoleAll, f.workers, runtime.GOMAXPROCS(0))
	if err != nil {
		return err
	}
	stop, err := b.startOutboxd(ctx, size)
	if err != nil {
		return err
	}
	defer stop()
	fmt.Fprintf(b.out, "outboxd bench: N=%d, %d HTTP clients, batches of %d, %d workers, pool of %d connections, River raw: %d jobs, %d workers; GOMAXPROCS %d; %s\n",
		f.n, f.concurrency, f.batchSize, f.workers, b.pool.Config().MaxConns, max(f.n, f.riverN), f.riverWorkers, runtime.GOMAXPROCS(0), b.serverVersion)

	if !f.skipSingle {
		if err := add(b.measure(ctx, "single", "single", f.n, func() error { return b.postSingles(ctx, "single", f.n) })); err != nil {
			return fmt.Errorf("single: %w", err)
		}
	}
	if !f.skipBatch {
		if err := add(b.measure(ctx, "batch", "batch", f.n, func() error { return b.postBatches(ctx, "batch", f.n, nil) })); err != nil {
			return fmt.Errorf("batch: %w", err)
		}
	}
	if f.providerLatency > 0 {
		b.slack.latency.Store(int64(f.providerLatency))
		name := fmt.Sprintf("single, provider %s", f.providerLatency)
		err := add(b.measure(ctx, name, "slow", f.n, func() error { return b.postSingles(ctx, "slow", f.n) }))
		b.slack.latency.Store(0)
		if err != nil {
			return fmt.Errorf("slow provider: %w", err)
		}
	}
	if f.offeredRate > 0 {
		// The stream's first second warms the pool, whose connections the
		// bench closed to read the statistics: a server that has run for a
		// while keeps them (pgxpool closes connections idle for 30 minutes).
		name, warm := fmt.Sprintf("single, %d/s offered", f.offeredRate), f.offeredRate
		r, err := b.measure(ctx, name, "offered", warm+f.n, func() error { return b.postPaced(ctx, "offered", warm, f.n, f.offeredRate) })
		if r != nil {
			r.note = fmt.Sprintf("its first %d envelopes (a second) open the pool's connections again and are left out of p50/p99", warm)
		}
		if err := add(r, err); err != nil {
			return fmt.Errorf("offered rate: %w", err)
		}
	}
	if f.approvals > 0 {
		if err := add(b.approvalLatency(ctx, f.approvals)); err != nil {
			return fmt.Errorf("approvals: %w", err)
		}
	}
	if f.backlog > 0 {
		if err := add(b.fillBacklog(ctx, f.backlog)); err != nil {
			return fmt.Errorf("backlog: %w", err)
		}
		name := fmt.Sprintf("single, %d queued", f.backlog)
		if err := add(b.measure(ctx, name, "backlog-single", f.n, func() error { return b.postSingles(ctx, "backlog-single", f.n) })); err != nil {
			return fmt.Errorf("single with a backlog: %w", err)
		}
		name = fmt.Sprintf("batch, %d queued", f.backlog)
		if err := add(b.measure(ctx, name, "backlog-batch", f.n, func() error { return b.postBatches(ctx, "backlog-batch", f.n, nil) })); err != nil {
			return fmt.Errorf("batch with a backlog: %w", err)
		}
	}
	if err := b.readLatencies(ctx, results); err != nil {
		return err
	}
	printBenchTable(b.out, results)
	return nil
}

// bench is one run: the scratch database, the outboxd process under test
// and its loopback Slack.
type bench struct {
	flags         benchFlags
	worker        worker.Config // the configured worker settings, --workers applied
	out           io.Writer
	logger        *slog.Logger
	dbURL         string
	serverVersion string
	// pgPID is the embedded server's process, whose CPU the phases
	// report; 0 on another server.
	pgPID int

	// monitor reads pg_stat_database from another database, so reading
	// does not count as the bench database's transactions.
	monitor *pgx.Conn
	dbName  string

	slack      *loopbackSlack
	app        *app.App
	pool       *pgxpool.Pool
	base       string
	http       *http.Client
	owner      string
	service    string
	completed  atomic.Int64
	failed     atomic.Int64
	listenDone chan struct{}
	noBatch    string // why the batch endpoint cannot be measured, if it cannot
}

// phaseResult is one row of the report.
type phaseResult struct {
	name    string
	prefix  string // external_id prefix of the phase's envelopes; "" when none
	actions int
	// enqueue is how long the requests took (zero when not measured),
	// total how long until the last action completed.
	enqueue, total time.Duration
	// latencies are the phase's enqueue→completed times in seconds,
	// sorted; for the approval phase, approve→provider call.
	latencies []float64
	xacts     int64
	peakRSSkB int64
	// cpu is the CPU time this process (outboxd, the bench's clients and
	// the loopback Slack) and the embedded Postgres used during the phase;
	// pgCPU is negative when the server is not the embedded one.
	cpu, pgCPU time.Duration
	river      bool // the River baseline
	note       string
}

func (b *bench) open(ctx context.Context, monitorURL string) error {
	var err error
	b.monitor, err = pgx.Connect(ctx, monitorURL)
	if err != nil {
		return fmt.Errorf("connecting to the server's postgres database: %w", err)
	}
	cfg, err := pgx.ParseConfig(b.dbURL)
	if err != nil {
		return err
	}
	b.dbName = cfg.Database
	if err := b.monitor.QueryRow(ctx, "SELECT current_setting('server_version')").Scan(&b.serverVersion); err != nil {
		return err
	}
	b.serverVersion = "PostgreSQL " + b.serverVersion
	pool, err := pgxpool.New(ctx, b.dbURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	_, err = migrations.Up(ctx, pool)
	return err
}

func (b *bench) close() {
	if b.monitor != nil {
		_ = b.monitor.Close(context.Background())
	}
}

// xacts is the bench database's committed and rolled-back transactions so
// far, as far as the server's statistics know.
func (b *bench) xacts(ctx context.Context) (int64, error) {
	var n int64
	err := b.monitor.QueryRow(ctx, `SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = $1`, b.dbName).Scan(&n)
	return n, err
}

// settle makes the statistics exact. A backend sends its counts at most
// once a second, and an idle one may keep them for ten seconds; a closing
// one always sends them. So the pool's connections are closed (the next
// phase opens them again, one transaction each), those of the API's pool
// close once idle for idleClose, and then the connections no pool closes —
// River's notifier and the waiter, which LISTEN and run a transaction for
// each notifying commit they hear — are woken by a NOTIFY so they send
// theirs. Then settle waits until the count stops moving.
func (b *bench) settle(ctx context.Context) {
	if b.pool != nil {
		b.pool.Reset()
		if b.flags.statsSettle > 0 {
			time.Sleep(b.flags.statsSettle)
			if conn, err := pgx.Connect(ctx, b.dbURL); err == nil {
				_, _ = conn.Exec(ctx, "NOTIFY outboxd_bench_settle")
				_ = conn.Close(ctx)
			}
		}
	}
	last := int64(-1)
	for range 20 {
		time.Sleep(150 * time.Millisecond)
		n, err := b.xacts(ctx)
		if err != nil || n == last {
			break
		}
		last = n
	}
}

// analyze gathers the planner's statistics of tables (by default all of
// the bench database's tables that hold rows), as autovacuum does on a server within a minute of a
// table changing. Each phase lasts seconds, too short for autovacuum to
// come by: without this, phases would run on plans made for the empty
// tables of a new database (River's completer, for one, then hashes the
// whole of river_job for every batch of completions). Empty tables are left
// alone: statistics saying a table is empty make a lookup by primary key a
// sequential scan, which the prepared statements of a phase then keep
// while the table grows, whereas a table never analyzed is planned as
// holding some pages. Each table analyzed is a transaction: call it before
// settle and the count a phase starts from.
func (b *bench) analyze(ctx context.Context, tables ...string) {
	conn, err := pgx.Connect(ctx, b.dbURL)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	if len(tables) == 0 {
		rows, err := conn.Query(ctx, `SELECT c.oid::regclass::text FROM pg_class c
			WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'`)
		if err != nil {
			return
		}
		all, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return
		}
		for _, t := range all {
			var filled bool
			if conn.QueryRow(ctx, "SELECT EXISTS (SELECT FROM "+t+")").Scan(&filled) == nil && filled {
				tables = append(tables, t)
			}
		}
	}
	if len(tables) > 0 {
		_, _ = conn.Exec(ctx, "ANALYZE "+strings.Join(tables, ", "))
	}
}

// idleClose is how long the bench's connections may stay idle.
const idleClose = time.Second

// measure runs one outboxd phase of n actions: run sends the requests, and
// the phase ends when n more invocations have completed.
func (b *bench) measure(ctx context.Context, name, prefix string, n int, run func() error) (*phaseResult, error) {
	b.analyze(ctx)
	b.settle(ctx)
	x0, err := b.xacts(ctx)
	if err != nil {
		return nil, err
	}
	resetPeakRSS()
	target := b.completed.Load() + int64(n)
	failedBefore := b.failed.Load()
	cpu0, pg0 := b.cpuUsed()
	start := time.Now()
	if err := run(); err != nil {
		if errors.Is(err, errNoBatch) {
			return &phaseResult{name: name, note: b.noBatch}, nil
		}
		return nil, err
	}
	enqueue := time.Since(start)
	if err := b.waitCompleted(ctx, target, failedBefore); err != nil {
		return nil, err
	}
	total := time.Since(start)
	cpu1, pg1 := b.cpuUsed()
	rss := peakRSS()
	b.settle(ctx)
	x1, err := b.xacts(ctx)
	if err != nil {
		return nil, err
	}
	return &phaseResult{
		name: name, prefix: prefix, actions: n, enqueue: enqueue, total: total, xacts: x1 - x0, peakRSSkB: rss,
		cpu: cpu1 - cpu0, pgCPU: cpuDelta(pg0, pg1),
	}, nil
}

func (b *bench) waitCompleted(ctx context.Context, target, failedBefore int64) error {
	deadline := time.Now().Add(10 * time.Minute)
	for b.completed.Load() < target {
		if f := b.failed.Load() - failedBefore; f > 0 {
			return fmt.Errorf("%d invocations failed", f)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of the phase's invocations completed in 10 minutes", b.completed.Load()-target)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-b.listenDone:
			return errors.New("the event subscription ended")
		case <-time.After(2 * time.Millisecond):
		}
	}
	return nil
}

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
func (b *bench) riverRaw(ctx context.Context, call bool) (*phaseResult, error) {
	n := max(b.flags.n, b.flags.riverN)
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
		Queues:            map[string]river.QueueConfig{"bench_noop": {MaxWorkers: b.flags.riverWorkers}},
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

// loopbackSlack answers chat.postMessage, after latency when set, and
// tells watchers when the call for an invocation arrives.
type loopbackSlack struct {
	server  *httptest.Server
	latency atomic.Int64 // time.Duration
	mu      sync.Mutex
	watch   map[string]chan time.Time
}

func newLoopbackSlack() *loopbackSlack {
	s := &loopbackSlack{watch: map[string]chan time.Time{}}
	s.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		s.mu.Lock()
		ch := s.watch[r.Header.Get("X-Outboxd-Idempotency-Key")]
		s.mu.Unlock()
		if ch != nil {
			select {
			case ch <- at:
			default:
			}
		}
		_, _ = io.Copy(io.Discard, r.Body)
		if d := time.Duration(s.latency.Load()); d > 0 {
			time.Sleep(d)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true,"channel":"C1","ts":"1503435956.000247"}`)
	}))
	return s
}

// expect returns a channel receiving when the call for invocation id arrives.
func (s *loopbackSlack) expect(id string) (<-chan time.Time, func()) {
	ch := make(chan time.Time, 1)
	s.mu.Lock()
	s.watch[id] = ch
	s.mu.Unlock()
	return ch, func() {
		s.mu.Lock()
		delete(s.watch, id)
		s.mu.Unlock()
	}
}

const benchOrg = "bench-org"

// startOutboxd runs outboxd (role all) in this process on a pool of size
// connections, with an unlimited slack.minute bucket, a Slack credential
// and send_message allowed, and starts counting completed invocations.
func (b *bench) startOutboxd(ctx context.Context, size int32) (stop func(), err error) {
	b.slack = newLoopbackSlack()
	cleanups := []func(){b.slack.server.Close}
	stop = func() {
		for _, c := range slices.Backward(cleanups) {
			c()
		}
	}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	cfg, err := pgxpool.ParseConfig(b.dbURL)
	if err != nil {
		return nil, err
	}
	if size > 0 {
		cfg.MaxConns = size
	}
	// Connections idle for a second close, so between phases the API's
	// pool (which app.New derives from this one) sends its statistics too.
	cfg.MaxConnIdleTime = idleClose
	cfg.HealthCheckPeriod = idleClose / 4
	b.pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	cleanups = append(cleanups, b.pool.Close)

	appCfg := &app.Config{
		HTTPAddr: "127.0.0.1:0", JWTSecret: secretbox.NewKey(), SecretsKey: secretbox.NewKey(),
		Providers:       map[string]executors.ProviderConfig{slack.SourceID: {BaseURL: b.slack.server.URL}},
		ShutdownTimeout: 30 * time.Second,
		Worker:          b.worker,
		// Measure outboxd, not Slack's rate limit: the bucket is taken on
		// every job but never runs dry.
		Buckets: []flow.BucketConfig{{Name: "slack.minute", Rate: 1_000_000, Interval: time.Second, Burst: 1_000_000, Scope: flow.ScopeOrg}},
	}
	b.app, err = app.New(appCfg, app.RoleAll, b.pool, b.logger)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", appCfg.HTTPAddr)
	if err != nil {
		return nil, err
	}
	listenCtx, stopListening := context.WithCancel(ctx)
	b.listen(listenCtx)
	cleanups = append(cleanups, func() { stopListening(); <-b.listenDone })
	runCtx, cancel := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- b.app.Serve(runCtx, ln, nil) }()
	cleanups = append(cleanups, func() { cancel(); <-served })
	b.base = "http://" + ln.Addr().String()

	mint := func(c auth.Claims) string {
		c.Org = benchOrg
		t, _ := auth.Mint(appCfg.JWTSecret, c, 24*time.Hour)
		return t
	}
	b.owner = mint(auth.Claims{Kind: auth.KindUser, Role: auth.RoleOwner, RegisteredClaims: jwt.RegisteredClaims{Subject: "bench-owner"}})
	b.service = mint(auth.Claims{Kind: auth.KindService, RegisteredClaims: jwt.RegisteredClaims{Subject: "bench"}})
	b.http = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: b.flags.concurrency + 8}, Timeout: 5 * time.Minute}
	if code, _, err := b.call(ctx, "PUT", "/v1/credentials/slack", b.owner, map[string]string{"token": "xoxb-bench"}); err != nil || code != http.StatusOK {
		return nil, fmt.Errorf("storing the bench credential: %d %v", code, err)
	}
	if code, _, err := b.call(ctx, "PUT", "/v1/action-modes", b.owner, map[string]string{"slack:send_message": "allow"}); err != nil || code != http.StatusOK {
		return nil, fmt.Errorf("allowing send_message: %d %v", code, err)
	}
	// Until the batch endpoint exists, its phases are reported as skipped.
	code, _, err := b.call(ctx, "POST", "/v1/envelopes/batch", b.service, map[string]any{"envelopes": []any{}})
	if err != nil {
		return nil, err
	}
	if code == http.StatusNotFound || code == http.StatusMethodNotAllowed {
		b.noBatch = fmt.Sprintf("POST /v1/envelopes/batch answered %d: not built yet", code)
	}
	return stop, nil
}

// listen counts the execute jobs River finishes. It does not LISTEN on
// the database: every notifying commit makes each listening backend run a
// transaction to read the queue, which would count as outboxd's.
func (b *bench) listen(ctx context.Context) {
	events, cancel := b.app.River.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: 100_000,
		Kinds:    []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled},
	})
	b.listenDone = make(chan struct{})
	go func() {
		defer close(b.listenDone)
		defer cancel()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-events:
				if !ok {
					return
				}
				if e.Job.Kind != (invocation.ExecuteArgs{}).Kind() {
					continue
				}
				if e.Kind == river.EventKindJobCompleted {
					b.completed.Add(1)
				} else {
					b.failed.Add(1)
				}
			}
		}
	}()
}

func (b *bench) call(ctx context.Context, method, path, token string, body any) (int, []byte, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, method, b.base+path, bytes.NewReader(raw))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// envelope is the bench's Slack message envelope number i of prefix.
func envelope(prefix string, i int, approval string) map[string]any {
	e := map[string]any{
		"external_id": fmt.Sprintf("%s-%d", prefix, i),
		"tool":        map[string]string{"source": "slack", "action": "send_message"},
		"args":        map[string]string{"channel": "C1", "text": fmt.Sprintf("bench message %d", i)},
	}
	if approval != "" {
		e["approval"] = approval
	}
	return e
}

// postSingles posts n envelopes one request each from the configured
// number of concurrent clients.
func (b *bench) postSingles(ctx context.Context, prefix string, n int) error {
	var next atomic.Int64
	errs := make(chan error, b.flags.concurrency)
	var wg sync.WaitGroup
	for range b.flags.concurrency {
		wg.Go(func() {
			for {
				i := int(next.Add(1))
				if i > n {
					return
				}
				code, body, err := b.call(ctx, "POST", "/v1/envelopes", b.service, envelope(prefix, i, ""))
				if err == nil && code != http.StatusCreated {
					err = fmt.Errorf("POST /v1/envelopes answered %d: %s", code, body)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// postPaced posts warm envelopes (external ids warm-<prefix>-i) and then
// n more one request each at rate per second, each at its own time
// whatever became of the earlier ones (an open loop, as independent
// callers would), so latency is measured at that load rather than at
// whatever rate the clients manage.
func (b *bench) postPaced(ctx context.Context, prefix string, warm, n, rate int) error {
	errs := make(chan error, warm+n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := 1; i <= warm+n; i++ {
		time.Sleep(time.Until(start.Add(time.Duration(i-1) * time.Second / time.Duration(rate))))
		e := envelope(prefix, i-warm, "")
		if i <= warm {
			e = envelope("warm-"+prefix, i, "")
		}
		wg.Go(func() {
			code, body, err := b.call(ctx, "POST", "/v1/envelopes", b.service, e)
			if err == nil && code != http.StatusCreated {
				err = fmt.Errorf("POST /v1/envelopes answered %d: %s", code, body)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

var errNoBatch = errors.New("the batch endpoint is not available")

// postBatches posts n envelopes through POST /v1/envelopes/batch, at most
// four requests at once. ids, when not nil, receives the action ids.
func (b *bench) postBatches(ctx context.Context, prefix string, n int, ids *[]string) error {
	if b.noBatch != "" {
		return errNoBatch
	}
	type batch struct{ from, to int }
	batches := make(chan batch, n/b.flags.batchSize+1)
	for from := 1; from <= n; from += b.flags.batchSize {
		batches <- batch{from, min(n, from+b.flags.batchSize-1)}
	}
	close(batches)
	var mu sync.Mutex
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for range min(4, len(batches)) {
		wg.Go(func() {
			for bt := range batches {
				items := make([]map[string]any, 0, bt.to-bt.from+1)
				for i := bt.from; i <= bt.to; i++ {
					items = append(items, envelope(prefix, i, ""))
				}
				got, err := b.postBatch(ctx, items)
				if err != nil {
					errs <- err
					return
				}
				if ids != nil {
					mu.Lock()
					*ids = append(*ids, got...)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// postBatch posts one batch and requires every item to be created.
func (b *bench) postBatch(ctx context.Context, items []map[string]any) ([]string, error) {
	code, body, err := b.call(ctx, "POST", "/v1/envelopes/batch", b.service, map[string]any{"envelopes": items})
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("POST /v1/envelopes/batch answered %d: %s", code, body)
	}
	var resp struct {
		Envelopes []struct {
			ActionID string          `json:"action_id"`
			Created  bool            `json:"created"`
			Error    json.RawMessage `json:"error"`
		} `json:"envelopes"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, fmt.Errorf("batch answer: %w", err)
	}
	if len(resp.Envelopes) != len(items) {
		return nil, fmt.Errorf("batch of %d answered %d items", len(items), len(resp.Envelopes))
	}
	ids := make([]string, len(items))
	for i, e := range resp.Envelopes {
		if e.Error != nil || !e.Created {
			return nil, fmt.Errorf("batch item %d not created: %s", i, e.Error)
		}
		ids[i] = e.ActionID
	}
	return ids, nil
}

// approvalLatency parks k invocations for approval, then approves them one
// at a time on an idle queue and times each from the approve response to
// the call reaching Slack.
func (b *bench) approvalLatency(ctx context.Context, k int) (*phaseResult, error) {
	ids := make([]string, k)
	for i := range k {
		code, body, err := b.call(ctx, "POST", "/v1/envelopes", b.service, envelope("approval", i+1, "required"))
		if err != nil || code != http.StatusCreated {
			return nil, fmt.Errorf("parking an envelope for approval: %d %s %v", code, body, err)
		}
		var view struct {
			ActionID string `json:"action_id"`
		}
		if err := json.Unmarshal(body, &view); err != nil {
			return nil, err
		}
		ids[i] = view.ActionID
	}
	b.analyze(ctx)
	b.settle(ctx)
	x0, err := b.xacts(ctx)
	if err != nil {
		return nil, err
	}
	resetPeakRSS()
	latencies := make([]float64, 0, k)
	for _, id := range ids {
		target := b.completed.Load() + 1
		called, forget := b.slack.expect(id)
		code, body, err := b.call(ctx, "POST", "/v1/invocations/"+id+"/approve", b.owner, map[string]string{"mode": "once"})
		approved := time.Now()
		if err == nil && code != http.StatusOK {
			err = fmt.Errorf("approve answered %d: %s", code, body)
		}
		if err != nil {
			forget()
			return nil, err
		}
		select {
		case at := <-called:
			latencies = append(latencies, max(0, at.Sub(approved).Seconds()))
		case <-time.After(time.Minute):
			forget()
			return nil, fmt.Errorf("the approved invocation %s never reached Slack", id)
		}
		forget()
		// An idle queue: the next approval waits for this one to finish.
		if err := b.waitCompleted(ctx, target, b.failed.Load()); err != nil {
			return nil, err
		}
	}
	rss := peakRSS()
	b.settle(ctx)
	x1, err := b.xacts(ctx)
	if err != nil {
		return nil, err
	}
	slices.Sort(latencies)
	return &phaseResult{
		name: "approve → provider call", actions: k, latencies: latencies, xacts: x1 - x0, peakRSSkB: rss,
		note: "one at a time; p50/p99 from the approve response to Slack's receipt; xact/action includes the approve request",
	}, nil
}

// fillBacklog leaves n envelopes queued: they are enqueued while the
// actions queue is paused, then their jobs are scheduled an hour ahead —
// the state a rate bucket's snooze leaves a job in — and the queue resumes.
func (b *bench) fillBacklog(ctx context.Context, n int) (*phaseResult, error) {
	if err := b.app.River.QueuePause(ctx, invocation.QueueActions, nil); err != nil {
		return nil, err
	}
	time.Sleep(time.Second) // the producer hears of the pause
	b.analyze(ctx)
	b.settle(ctx)
	x0, err := b.xacts(ctx)
	if err != nil {
		return nil, err
	}
	resetPeakRSS()
	start := time.Now()
	err = b.postBatches(ctx, "backlog", n, nil)
	how := "through the batch endpoint"
	if errors.Is(err, errNoBatch) {
		how = "one request each (no batch endpoint)"
		err = b.postSingles(ctx, "backlog", n)
	}
	if err != nil {
		return nil, err
	}
	enqueue := time.Since(start)
	rss := peakRSS()
	b.settle(ctx)
	x1, err := b.xacts(ctx)
	if err != nil {
		return nil, err
	}
	tag, err := b.pool.Exec(ctx, `UPDATE river_job SET state = 'scheduled', scheduled_at = now() + interval '1 hour'
		WHERE queue = $1 AND state = 'available'`, invocation.QueueActions)
	if err != nil {
		return nil, err
	}
	if err := b.app.River.QueueResume(ctx, invocation.QueueActions, nil); err != nil {
		return nil, err
	}
	if tag.RowsAffected() < int64(n) {
		return nil, fmt.Errorf("only %d of %d backlog jobs were left queued", tag.RowsAffected(), n)
	}
	return &phaseResult{
		name: fmt.Sprintf("backlog fill (%d)", n), actions: n, enqueue: enqueue, xacts: x1 - x0, peakRSSkB: rss,
		note: "enqueued " + how + " on a paused queue; not executed: their jobs wait an hour",
	}, nil
}

// readLatencies fills in each outboxd phase's enqueue→completed times from
// the invocations, once every phase has run (the reads would count as a
// phase's transactions otherwise).
func (b *bench) readLatencies(ctx context.Context, results []*phaseResult) error {
	conn, err := pgx.Connect(ctx, b.dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for _, r := range results {
		if r.prefix == "" || r.actions == 0 {
			continue
		}
		rows, err := conn.Query(ctx, `SELECT extract(epoch FROM completed_at - created_at)::float8 FROM action_invocations
			WHERE organization_id = $1 AND external_id LIKE $2 AND status = 'completed'`, benchOrg, r.prefix+"-%")
		if err != nil {
			return err
		}
		r.latencies, err = pgx.CollectRows(rows, pgx.RowTo[float64])
		if err != nil {
			return err
		}
		slices.Sort(r.latencies)
	}
	return nil
}

func printBenchTable(w io.Writer, results []*phaseResult) {
	var riverRate float64
	for _, r := range results {
		if r.river && r.total > 0 {
			riverRate = float64(r.actions) / r.total.Seconds()
		}
	}
	fmt.Fprintf(w, "\n%-28s %7s %10s %10s %8s %9s %9s %12s %9s %17s\n",
		"phase", "actions", "enqueue/s", "actions/s", "÷River", "p50", "p99", "xact/action", "peak RSS", "CPU µs/action")
	var notes []string
	for _, r := range results {
		if r.actions == 0 {
			fmt.Fprintf(w, "%-28s skipped: %s\n", r.name, r.note)
			continue
		}
		dash := "—"
		enqueue, rate, ratio, p50, p99 := dash, dash, dash, dash, dash
		if r.enqueue > 0 {
			enqueue = fmt.Sprintf("%.0f", float64(r.actions)/r.enqueue.Seconds())
		}
		if r.total > 0 {
			v := float64(r.actions) / r.total.Seconds()
			rate = fmt.Sprintf("%.0f", v)
			if riverRate > 0 {
				ratio = fmt.Sprintf("%.3f", v/riverRate)
			}
		}
		if len(r.latencies) > 0 {
			p50, p99 = seconds(percentile(r.latencies, 0.50)).String(), seconds(percentile(r.latencies, 0.99)).String()
		}
		cpu := dash
		if r.cpu > 0 {
			cpu = fmt.Sprintf("%d", r.cpu.Microseconds()/int64(r.actions))
			if r.pgCPU >= 0 {
				cpu += fmt.Sprintf(" + %d PG", r.pgCPU.Microseconds()/int64(r.actions))
			}
		}
		fmt.Fprintf(w, "%-28s %7d %10s %10s %8s %9s %9s %12.2f %6d MB %17s\n",
			r.name, r.actions, enqueue, rate, ratio, p50, p99, float64(r.xacts)/float64(r.actions), r.peakRSSkB/1024, cpu)
		if r.note != "" {
			notes = append(notes, r.name+": "+r.note)
		}
	}
	notes = append(notes, "River raw: jobs inserted before the clock starts, so it has no enqueue rate or latency",
		"CPU µs/action: this process (outboxd, the HTTP clients, the loopback Slack) + the embedded Postgres (PG, not shown on another server)")
	for _, n := range notes {
		fmt.Fprintln(w, "  "+n)
	}
}

// cpuUsed returns the CPU time used so far by this process and by the
// embedded Postgres (-1 without one): the postmaster with the children it
// reaped, plus its live children.
func (b *bench) cpuUsed() (self, pg time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if b.pgPID == 0 {
		return self, -1
	}
	pm := procStat(b.pgPID)
	if pm == nil {
		return self, -1
	}
	ticks := statTicks(pm, true)
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == b.pgPID {
			continue
		}
		if f := procStat(pid); f != nil && f[1] == strconv.Itoa(b.pgPID) {
			ticks += statTicks(f, false)
		}
	}
	// USER_HZ is 100 on every Linux architecture Go supports.
	return self, time.Duration(ticks) * 10 * time.Millisecond
}

// procStat returns the fields of /proc/<pid>/stat from the state (field 3)
// on, nil when there is no such process. The command before them, in
// parentheses, may hold spaces.
func procStat(pid int) []string {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	if len(f) < 15 {
		return nil
	}
	return f
}

// statTicks is utime+stime (fields 14 and 15) of procStat's fields, plus
// the reaped children's cutime+cstime (16 and 17) when children is set.
func statTicks(f []string, children bool) int64 {
	fields := f[11:13]
	if children {
		fields = f[11:15]
	}
	var sum int64
	for _, v := range fields {
		n, _ := strconv.ParseInt(v, 10, 64)
		sum += n
	}
	return sum
}

// cpuDelta is after-before, or -1 when either is unknown.
func cpuDelta(before, after time.Duration) time.Duration {
	if before < 0 || after < 0 {
		return -1
	}
	return after - before
}

// resetPeakRSS restarts the kernel's peak RSS (VmHWM) from the current RSS,
// so the next peakRSS is the peak since now. It first returns the memory
// the Go runtime holds but no longer uses to the system, so that a phase's
// peak is not an earlier phase's memory the runtime has yet to give back.
// Where it cannot reset, peakRSS is the process's peak so far.
func resetPeakRSS() {
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSS is VmHWM of /proc/self/status in kB, or 0 where there is none.
func peakRSS() int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range bytes.Lines(raw) {
		if rest, ok := bytes.CutPrefix(line, []byte("VmHWM:")); ok {
			var kb int64
			_, _ = fmt.Sscan(string(rest), &kb)
			return kb
		}
	}
	return 0
}

// benchDatabase returns a scratch database and the URL of the postgres
// database of its server: a new database on the server of serverURL, or
// on an embedded Postgres when serverURL is empty, whose process pgPID is
// (0 otherwise).
func benchDatabase(ctx context.Context, serverURL string) (dbURL, monitorURL string, pgPID int, cleanup func(), err error) {
	name := "outboxd_bench_" + randomHex(4)
	if serverURL == "" {
		dir, err := os.MkdirTemp("", "outboxd-bench-")
		if err != nil {
			return "", "", 0, nil, err
		}
		_ = os.Chmod(dir, 0o755)
		pg, err := pglaunch.Start(ctx, &pglaunch.Config{DataDir: dir + "/pg"})
		if err != nil {
			os.RemoveAll(dir)
			return "", "", 0, nil, err
		}
		cleanup := func() {
			_ = pg.Stop(context.Background())
			_ = pg.RemoveData()
			os.RemoveAll(dir)
		}
		if err := pg.CreateDatabase(ctx, name); err != nil {
			cleanup()
			return "", "", 0, nil, err
		}
		return pg.URL(name), pg.URL("postgres"), pg.PID(), cleanup, nil
	}
	conn, err := pgx.Connect(ctx, serverURL)
	if err != nil {
		return "", "", 0, nil, err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", "", 0, nil, fmt.Errorf("creating a scratch database (the role needs CREATEDB): %w", err)
	}
	u, err := url.Parse(serverURL)
	if err != nil {
		return "", "", 0, nil, err
	}
	u.Path = "/" + name
	dbURL = u.String()
	u.Path = "/postgres"
	return dbURL, u.String(), 0, func() {
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

// writeAllocs writes the allocations of the run so far to path.
func writeAllocs(path string) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(out, 0); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
