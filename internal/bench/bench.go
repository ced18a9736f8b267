// Package bench measures outboxd's paths against River's raw throughput,
// in one run on one scratch database: the harness behind `outboxd bench`
// (whose help text describes the phases).
package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxd/outboxd/internal/app"
	"github.com/outboxd/outboxd/internal/client"
	"github.com/outboxd/outboxd/internal/domain/auth"

	"github.com/outboxd/outboxd/migrations"
	"github.com/outboxd/outboxd/worker"
)

// Config is one run's settings; the fields are the command's flags.
type Config struct {
	// N is the actions per phase (and River's no-op jobs, at least).
	N int
	// Concurrency is the HTTP clients of the single-envelope phases.
	Concurrency int
	// Workers is outboxd's worker.max_workers.
	Workers int
	// RiverWorkers is MaxWorkers of the River raw phase; RiverN its no-op
	// jobs (at least N).
	RiverWorkers, RiverN int
	// BatchSize is the envelopes per batch request (1 to 1000).
	BatchSize int
	// ProviderLatency is how long the loopback Slack takes to answer in
	// the slow-provider phase (0 skips it).
	ProviderLatency time.Duration
	// OfferedRate is the envelopes per second of the offered-rate phase
	// (0 skips it).
	OfferedRate int
	// Approvals is the require_approval invocations approved one by one
	// (0 skips the phase).
	Approvals int
	// Backlog is the envelopes left queued before the single and batch
	// phases run again (0 skips it).
	Backlog int
	// Flood is the envelopes one organization posts through the batch
	// endpoint while another posts one every 20 ms (0 skips the phase).
	Flood int
	// Skip names phases to leave out: single, invoke, mcp, batch,
	// river-call.
	Skip []string
	// CPUProfile and MemProfile, when set, are files for a CPU profile
	// and a profile of the allocations of the whole run.
	CPUProfile, MemProfile string
	// ProfilePhase, when set, narrows CPUProfile to the outboxd phase of
	// that name (profilePhases), so that what one phase costs more than
	// another can be read from two profiles.
	ProfilePhase string
	// StatsSettle is the wait before waking listeners to flush their
	// statistics.
	StatsSettle time.Duration

	// ServerURL is the Postgres server the scratch database is made on;
	// empty runs an embedded Postgres in a temporary directory.
	ServerURL string
	// Worker is outboxd's configured worker settings (Workers replaces
	// MaxWorkers).
	Worker worker.Config
	// PoolSize is the size of outboxd's pool on the scratch database at
	// dbURL (0: the URL's own pool_max_conns).
	PoolSize func(dbURL string) (int32, error)
	// Logger receives outboxd's logs.
	Logger *slog.Logger
	// Out receives the report, Err the warnings of the run itself.
	Out, Err io.Writer

	skipSingle, skipInvoke, skipBatch, skipRiverCall, skipMCP bool
}

// Check refuses settings out of range and phases it does not know.
func (f *Config) Check() error {
	f.skipSingle, f.skipInvoke, f.skipBatch, f.skipRiverCall, f.skipMCP = false, false, false, false, false
	for _, phase := range f.Skip {
		switch phase {
		case "single":
			f.skipSingle = true
		case "invoke":
			f.skipInvoke = true
		case "mcp":
			f.skipMCP = true
		case "batch":
			f.skipBatch = true
		case "river-call":
			f.skipRiverCall = true
		default:
			return fmt.Errorf("--skip: unknown phase %q (single, invoke, mcp, batch or river-call)", phase)
		}
	}
	if f.ProfilePhase != "" {
		if f.CPUProfile == "" {
			return errors.New("--profile-phase needs --cpuprofile")
		}
		if !slices.Contains(profilePhases, f.ProfilePhase) {
			return fmt.Errorf("--profile-phase: unknown phase %q (%s)", f.ProfilePhase, strings.Join(profilePhases, ", "))
		}
	}
	switch {
	case f.N < 1 || f.Concurrency < 1 || f.Workers < 1 || f.RiverWorkers < 1 || f.RiverN < 0:
		return errors.New("--n, --concurrency, --workers and --river-workers must be positive, --river-n not negative")
	case f.BatchSize < 1 || f.BatchSize > 1000:
		return errors.New("--batch-size must be between 1 and 1000")
	case f.Approvals < 0 || f.Backlog < 0 || f.Flood < 0 || f.ProviderLatency < 0 || f.OfferedRate < 0:
		return errors.New("--approvals, --backlog, --flood, --provider-latency and --offered-rate must not be negative")
	}
	return nil
}

// profilePhases are the phases --profile-phase may name: the prefixes of
// the outboxd phases' measure calls.
var profilePhases = []string{"single", "invoke", "mcp", "batch", "slow", "offered", "backlog-single", "backlog-batch"}

// profileCPU starts a CPU profile written to path and returns what stops
// it (more than once does no harm).
func profileCPU(path string) (stop func(), err error) {
	out, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(out); err != nil {
		out.Close()
		return nil, err
	}
	return sync.OnceFunc(func() {
		pprof.StopCPUProfile()
		out.Close()
	}), nil
}

// Run runs every phase not left out and prints the report to cfg.Out.
func Run(ctx context.Context, cfg Config) error {
	f := &cfg
	if err := f.Check(); err != nil {
		return err
	}
	if f.CPUProfile != "" && f.ProfilePhase == "" {
		stop, err := profileCPU(f.CPUProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	if f.MemProfile != "" {
		defer func() {
			if err := writeAllocs(f.MemProfile); err != nil {
				fmt.Fprintln(f.Err, "outboxd bench: writing the allocation profile:", err)
			}
		}()
	}

	dbURL, monitorURL, pgPID, cleanup, err := benchDatabase(ctx, f.ServerURL)
	if err != nil {
		return err
	}
	defer cleanup()
	b := &runner{cfg: f, worker: f.Worker, out: f.Out, dbURL: dbURL, pgPID: pgPID, logger: f.Logger}
	b.worker.MaxWorkers = f.Workers
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
	size, err := f.PoolSize(dbURL)
	if err != nil {
		return err
	}
	stop, err := b.startOutboxd(ctx, size)
	if err != nil {
		return err
	}
	defer stop()
	fmt.Fprintf(b.out, "outboxd bench: N=%d, %d HTTP clients, batches of %d, %d workers, pool of %d connections, River raw: %d jobs, %d workers; GOMAXPROCS %d; %s\n",
		f.N, f.Concurrency, f.BatchSize, f.Workers, b.pool.Config().MaxConns, max(f.N, f.RiverN), f.RiverWorkers, runtime.GOMAXPROCS(0), b.serverVersion)

	if !f.skipSingle {
		if err := add(b.measure(ctx, "single", "single", f.N, func() error { return b.postSingles(ctx, "single", f.N) })); err != nil {
			return fmt.Errorf("single: %w", err)
		}
	}
	if !f.skipInvoke {
		calls := make(callTimes, f.N)
		r, err := b.measure(ctx, "invoke (REST)", "invoke", f.N, func() error { return b.postInvokes(ctx, "invoke", calls) })
		if r != nil {
			r.note = "each invoke waits for its result, one agent session per client (single only posts the envelope)"
			r.calls = calls
		}
		if err := add(r, err); err != nil {
			return fmt.Errorf("invoke: %w", err)
		}
	}
	if !f.skipMCP {
		calls := make(callTimes, f.N)
		r, err := b.measure(ctx, "mcp tools/call", "mcp", f.N, func() error { return b.postMCP(ctx, "mcp", calls) })
		if r != nil {
			r.note = "each call waits for its result, as an MCP client does and as invoke does"
			r.calls = calls
		}
		if err := add(r, err); err != nil {
			return fmt.Errorf("mcp: %w", err)
		}
	}
	if !f.skipBatch {
		if err := add(b.measure(ctx, "batch", "batch", f.N, func() error { return b.postBatches(ctx, "batch", f.N, nil) })); err != nil {
			return fmt.Errorf("batch: %w", err)
		}
	}
	if f.ProviderLatency > 0 {
		b.slack.latency.Store(int64(f.ProviderLatency))
		name := fmt.Sprintf("single, provider %s", f.ProviderLatency)
		err := add(b.measure(ctx, name, "slow", f.N, func() error { return b.postSingles(ctx, "slow", f.N) }))
		b.slack.latency.Store(0)
		if err != nil {
			return fmt.Errorf("slow provider: %w", err)
		}
	}
	if f.OfferedRate > 0 {
		// The stream's first second warms the pool, whose connections the
		// bench closed to read the statistics: a server that has run for a
		// while keeps them (pgxpool closes connections idle for 30 minutes).
		name, warm := fmt.Sprintf("single, %d/s offered", f.OfferedRate), f.OfferedRate
		r, err := b.measure(ctx, name, "offered", warm+f.N, func() error { return b.postPaced(ctx, "offered", warm, f.N, f.OfferedRate) })
		if r != nil {
			r.note = fmt.Sprintf("its first %d envelopes (a second) open the pool's connections again and are left out of p50/p99", warm)
		}
		if err := add(r, err); err != nil {
			return fmt.Errorf("offered rate: %w", err)
		}
	}
	if f.Approvals > 0 {
		if err := add(b.approvalLatency(ctx, f.Approvals)); err != nil {
			return fmt.Errorf("approvals: %w", err)
		}
	}
	if f.Backlog > 0 {
		if err := add(b.fillBacklog(ctx, f.Backlog)); err != nil {
			return fmt.Errorf("backlog: %w", err)
		}
		name := fmt.Sprintf("single, %d queued", f.Backlog)
		if err := add(b.measure(ctx, name, "backlog-single", f.N, func() error { return b.postSingles(ctx, "backlog-single", f.N) })); err != nil {
			return fmt.Errorf("single with a backlog: %w", err)
		}
		name = fmt.Sprintf("batch, %d queued", f.Backlog)
		if err := add(b.measure(ctx, name, "backlog-batch", f.N, func() error { return b.postBatches(ctx, "backlog-batch", f.N, nil) })); err != nil {
			return fmt.Errorf("batch with a backlog: %w", err)
		}
	}
	if f.Flood > 0 {
		rs, err := b.flood(ctx, f.Flood)
		if err != nil {
			return fmt.Errorf("flood: %w", err)
		}
		results = append(results, rs...)
	}
	if err := b.readLatencies(ctx, results); err != nil {
		return err
	}
	printBenchTable(b.out, results)
	printStages(b.out, results)
	printComparison(b.out, results)
	return nil
}

// runner is one run: the scratch database, the outboxd process under test
// and its loopback Slack.
type runner struct {
	cfg           *Config
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
	owner      *client.Client    // the organization's owner
	service    *client.Client    // a service token of the organization
	sessions   []*client.Session // an agent session per client (sandbox tokens)
	completed  atomic.Int64
	failed     atomic.Int64
	listenDone chan struct{}
	noBatch    string // why the batch endpoint cannot be measured, if it cannot
	// clientOf is a client of the server under test with a token of org
	// carrying c.
	clientOf func(org string, c auth.Claims) *client.Client
}

// phaseResult is one row of the report.
type phaseResult struct {
	name   string
	prefix string // external id (or idempotency key) prefix of the phase's actions; "" when none
	org    string // the organization of those actions; "": the bench's

	actions int
	// enqueue is how long the requests took (zero when not measured),
	// total how long until the last action completed.
	enqueue, total time.Duration
	// latencies are the phase's enqueue→completed times in seconds,
	// sorted; for the approval phase, approve→provider call.
	latencies []float64
	// calls, for a phase whose clients wait for each result, are when
	// each was sent and answered, and stages where that time went.
	calls     callTimes
	stages    *stages
	xacts     int64
	peakRSSkB int64
	// cpu is the CPU time this process (outboxd, the bench's clients and
	// the loopback Slack) and the embedded Postgres used during the phase;
	// pgCPU is negative when the server is not the embedded one.
	cpu, pgCPU time.Duration
	river      bool // the River baseline
	note       string
}

func (b *runner) open(ctx context.Context, monitorURL string) error {
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

func (b *runner) close() {
	if b.monitor != nil {
		_ = b.monitor.Close(context.Background())
	}
}

// xacts is the bench database's committed and rolled-back transactions so
// far, as far as the server's statistics know.
func (b *runner) xacts(ctx context.Context) (int64, error) {
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
func (b *runner) settle(ctx context.Context) {
	if b.pool != nil {
		b.pool.Reset()
		if b.cfg.StatsSettle > 0 {
			time.Sleep(b.cfg.StatsSettle)
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
func (b *runner) analyze(ctx context.Context, tables ...string) {
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

// startPhase readies a phase's measures: the planner's statistics
// refreshed and the server's settled, then the transaction count the
// phase starts from, which it returns, and the peak RSS restarted.
func (b *runner) startPhase(ctx context.Context) (x0 int64, err error) {
	b.analyze(ctx)
	b.settle(ctx)
	if x0, err = b.xacts(ctx); err != nil {
		return 0, err
	}
	resetPeakRSS()
	return x0, nil
}

// endPhase returns a phase's peak RSS (kB) and, once the server's
// statistics settle, the transaction count it ends at.
func (b *runner) endPhase(ctx context.Context) (rssKB, x1 int64, err error) {
	rssKB = peakRSS()
	b.settle(ctx)
	x1, err = b.xacts(ctx)
	return rssKB, x1, err
}

// measure runs one outboxd phase of n actions: run sends the requests, and
// the phase ends when n more invocations have completed.
func (b *runner) measure(ctx context.Context, name, prefix string, n int, run func() error) (*phaseResult, error) {
	x0, err := b.startPhase(ctx)
	if err != nil {
		return nil, err
	}
	target := b.completed.Load() + int64(n)
	failedBefore := b.failed.Load()
	stopProfile := func() {}
	if prefix == b.cfg.ProfilePhase {
		if stopProfile, err = profileCPU(b.cfg.CPUProfile); err != nil {
			return nil, err
		}
		defer stopProfile()
	}
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
	stopProfile() // before the phase's end, which waits for statistics
	rss, x1, err := b.endPhase(ctx)
	if err != nil {
		return nil, err
	}
	return &phaseResult{
		name: name, prefix: prefix, actions: n, enqueue: enqueue, total: total, xacts: x1 - x0, peakRSSkB: rss,
		cpu: cpu1 - cpu0, pgCPU: cpuDelta(pg0, pg1),
	}, nil
}

func (b *runner) waitCompleted(ctx context.Context, target, failedBefore int64) error {
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

// readLatencies fills in each outboxd phase's enqueue→completed times from
// the invocations, once every phase has run (the reads would count as a
// phase's transactions otherwise).
func (b *runner) readLatencies(ctx context.Context, results []*phaseResult) error {
	conn, err := pgx.Connect(ctx, b.dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for _, r := range results {
		if r.prefix == "" || r.actions == 0 {
			continue
		}
		rows, err := conn.Query(ctx, `SELECT coalesce(i.external_id, i.idempotency_key), i.created_at, j.attempted_at, i.started_at, i.completed_at
			FROM action_invocations i LEFT JOIN river_job j ON j.id = i.job_id
			WHERE i.organization_id = $1 AND coalesce(i.external_id, i.idempotency_key) LIKE $2 AND i.status = 'completed'`, cmp.Or(r.org, benchOrg), r.prefix+"-%")
		if err != nil {
			return err
		}
		done, err := pgx.CollectRows(rows, pgx.RowToStructByPos[completion])
		if err != nil {
			return err
		}
		r.latencies = make([]float64, len(done))
		for i, d := range done {
			r.latencies[i] = d.Completed.Sub(d.Created).Seconds()
		}
		slices.Sort(r.latencies)
		if r.calls != nil {
			r.stages = stagesOf(done, r.prefix, r.calls)
		}
	}
	return nil
}
