package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
	"go.opentelemetry.io/otel/trace"

	"github.com/outboxd/outboxd/internal/domain/admin/adminstore"
	"github.com/outboxd/outboxd/internal/domain/catalog"
	"github.com/outboxd/outboxd/internal/domain/credential"
	"github.com/outboxd/outboxd/internal/domain/flow"
	"github.com/outboxd/outboxd/internal/domain/grant/grantstore"
	"github.com/outboxd/outboxd/internal/domain/intent"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/invocation/invocationstore"
	"github.com/outboxd/outboxd/internal/platform/batch"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/internal/platform/keyed"
	"github.com/outboxd/outboxd/internal/platform/secretbox"
	"github.com/outboxd/outboxd/internal/platform/telemetry"
	"github.com/outboxd/outboxd/internal/platform/tracing"
)

// Config configures the River client and its workers.
type Config struct {
	// MaxWorkers is how many execute jobs run at once in this process.
	// Jobs mostly wait on providers, and per-bucket max_concurrency is what
	// protects a provider, so it is well above the CPU count. Default 1000.
	MaxWorkers int
	// MaxOrgWorkers is how many of them one organization's jobs may hold
	// at once; its others wait, snoozed, spending no attempt and no token.
	// Default three quarters of MaxWorkers, at least 1.
	MaxOrgWorkers int
	// MaxAttempts is how many times a failing execute job is tried before it
	// is dead-lettered (discarded) and its invocation failed. Default 5.
	MaxAttempts int
	// RetryBaseDelay is the first retry's delay; each retry doubles it, with
	// jitter. Default 1s.
	RetryBaseDelay time.Duration
	// RetryMaxDelay caps the retry delay. Default 5m.
	RetryMaxDelay time.Duration
	// CallTimeout bounds one provider call. Default 20s.
	CallTimeout time.Duration
	// MaxProviderWaits is how many times a provider's Retry-After may snooze
	// one invocation without spending an attempt; later ones retry as
	// ordinary failures. Default 20.
	MaxProviderWaits int
	// RescueAfter is how long a job may stay running before River assumes
	// its process died and makes it available again. A job cannot run
	// longer than JobTimeout (River cancels it), so the default is
	// JobTimeout plus 5s: no job still running elsewhere is rescued, and a
	// killed process's jobs run again within RescueAfter plus River's 30s
	// rescuer interval.
	RescueAfter time.Duration
	// BookkeepingRetry is how long the worker keeps trying to record the
	// outcome of a provider call while Postgres is unreachable, before the
	// job fails and River runs it (and the call) again. Default 2m.
	BookkeepingRetry time.Duration
	// SweepInterval is how often pending invocations past expiry are
	// expired, as a safety net for the per-invocation expiry jobs.
	// Default 60s.
	SweepInterval time.Duration
	// PollInterval is how often River looks for jobs that became due
	// without a notification: snoozed and retried jobs. It bounds how late
	// a job refused by its rate bucket comes back, so it must stay well
	// under burst/rate of the buckets. Default 100ms.
	PollInterval time.Duration
	// FetchCooldown is how long a queue's jobs gather after one fetch
	// before the next: the longest a notified job waits for River's
	// producer on a busy queue, and what lets one fetch (and the begins and
	// completions after it) serve several jobs. Default 25ms, or
	// PollInterval if shorter; at most PollInterval.
	FetchCooldown time.Duration
	// PauseRecheck is how long a job of a paused organization is held
	// before its worker looks at the pause again. Resuming brings the
	// held jobs forward at once, and a job whose hold was under way as
	// the resume committed within a few seconds (the worker's pause
	// watch). Default 1m.
	PauseRecheck time.Duration
	// CompletedJobRetention, CancelledJobRetention and
	// DiscardedJobRetention are how long River keeps its finished jobs
	// (River's CompletedJobRetentionPeriod...): the invocation keeps the
	// outcome. -1 keeps them forever. Defaults River's: 24h, 24h and 7
	// days (a discarded job is a dead letter's).
	CompletedJobRetention time.Duration
	CancelledJobRetention time.Duration
	DiscardedJobRetention time.Duration
}

// WithDefaults returns a copy with unset fields defaulted.
func (c *Config) WithDefaults() *Config {
	cfg := &Config{
		MaxWorkers:       cmp.Or(c.MaxWorkers, 1000),
		MaxOrgWorkers:    c.MaxOrgWorkers,
		MaxAttempts:      cmp.Or(c.MaxAttempts, 5),
		RetryBaseDelay:   cmp.Or(c.RetryBaseDelay, time.Second),
		RetryMaxDelay:    cmp.Or(c.RetryMaxDelay, 5*time.Minute),
		CallTimeout:      cmp.Or(c.CallTimeout, 20*time.Second),
		RescueAfter:      c.RescueAfter,
		BookkeepingRetry: cmp.Or(c.BookkeepingRetry, 2*time.Minute),
		MaxProviderWaits: cmp.Or(c.MaxProviderWaits, 20),
		SweepInterval:    cmp.Or(c.SweepInterval, time.Minute),
		PollInterval:     cmp.Or(c.PollInterval, 100*time.Millisecond),
		FetchCooldown:    c.FetchCooldown,
		PauseRecheck:     cmp.Or(c.PauseRecheck, time.Minute),

		CompletedJobRetention: cmp.Or(c.CompletedJobRetention, 24*time.Hour),
		CancelledJobRetention: cmp.Or(c.CancelledJobRetention, 24*time.Hour),
		DiscardedJobRetention: cmp.Or(c.DiscardedJobRetention, 7*24*time.Hour),
	}
	if cfg.MaxOrgWorkers == 0 {
		cfg.MaxOrgWorkers = max(1, cfg.MaxWorkers*3/4)
	}
	if cfg.RescueAfter == 0 {
		cfg.RescueAfter = cfg.JobTimeout() + rescueMargin
	}
	if cfg.FetchCooldown == 0 {
		cfg.FetchCooldown = min(cfg.PollInterval, fetchCooldown)
	}
	return cfg
}

// reindexed is River's default set of indexes to rebuild now and then, less
// the two GIN indexes outboxd drops (migration 018).
func reindexed() []string {
	dropped := []string{"river_job_args_index", "river_job_metadata_index"}
	return slices.DeleteFunc(river.ReindexerIndexNamesDefault(), func(name string) bool {
		return slices.Contains(dropped, name)
	})
}

// fetchCooldown is FetchCooldown's default. It sets how many jobs each
// fetch finds: at 500 envelopes/s offered, 10 ms fetched them about one at
// a time, and each job's begin, token and completion then went alone (3.2
// transactions per action); 25 ms lets a few gather, so those statements
// serve several jobs each (2.0), for about 10 ms more from enqueue to
// completion.
const fetchCooldown = 25 * time.Millisecond

// rescueMargin is how much longer than the job timeout a job must run
// before it is presumed orphaned.
const rescueMargin = 5 * time.Second

func (c *Config) validate() error {
	switch {
	case c.MaxWorkers < 1:
		return errors.New("worker.max_workers must be at least 1")
	case c.MaxOrgWorkers < 1:
		return errors.New("worker.max_org_workers must be 0 (three quarters of worker.max_workers) or a positive number")
	case c.PollInterval < time.Millisecond:
		return errors.New("worker.poll_interval must be at least 1ms")
	case c.FetchCooldown < time.Millisecond || c.FetchCooldown > c.PollInterval:
		return errors.New("worker.fetch_cooldown must be at least 1ms and at most worker.poll_interval")
	case c.PauseRecheck < time.Second:
		return errors.New("worker.pause_recheck must be at least 1s")
	case c.MaxAttempts < 1:
		return errors.New("worker.max_attempts must be at least 1")
	case c.RetryMaxDelay < c.RetryBaseDelay:
		return errors.New("worker.retry_max_delay must not be below worker.retry_base_delay")
	case c.RescueAfter <= c.JobTimeout():
		return fmt.Errorf("worker.rescue_after must be longer than worker.call_timeout + %s", jobOverhead)
	}
	return nil
}

// jobOverhead is what a job may spend besides its provider call: loading
// the invocation, gates, the token, recording the outcome.
const jobOverhead = 5 * time.Second

// JobTimeout is how long one execute job may run: the call deadline plus
// the bookkeeping around it.
func (c *Config) JobTimeout() time.Duration { return c.CallTimeout + jobOverhead }

// TokenSource resolves the credential for a call at call time: the
// encrypted store or a token broker. refresh asks for a new token after the
// provider rejected the last one.
type TokenSource interface {
	Token(ctx context.Context, req credential.Request, refresh bool) (credential.Token, error)
}

// SourceResolver finds the source of an invocation: a provider, or one of
// the organization's connectors.
type SourceResolver interface {
	Source(ctx context.Context, org, id string) (*catalog.Source, error)
}

// Deps are what the workers need from the rest of the process.
type Deps struct {
	// Pool is River's.
	Pool *pgxpool.Pool
	// DB is what the workers read and write through; default Pool. Tests
	// give a transaction they roll back.
	DB DB
	// Groups runs the begins and the completions of groups of jobs, when
	// set: a dbutil.IndexPool, which plans each statement once per
	// connection. Without it they are planned for their jobs on DB.
	Groups  dbutil.DB
	Sources SourceResolver
	Tokens  TokenSource
	// Box opens the sealed exact params of invocations whose stored params
	// are redacted.
	Box *secretbox.Box
	// Intents recomputes the intent a human approved before each call
	// (package intent); nil checks none.
	Intents *intent.Intents
	// Secrets are outboxd's own secrets (the JWT secret, secrets.key, the
	// database password...): scrubbed from every result, error and step a
	// job stores, like the credential of its call, so that no provider or
	// plugin answer can hand one out.
	Secrets []string
	// Flow enforces rate buckets and concurrency limits; nil disables them.
	Flow    *flow.Limiter
	Metrics *telemetry.Metrics
	Logger  *slog.Logger
	// Jobs are job kinds of other packages (webhook deliveries), run with
	// the others.
	Jobs []JobSet
	// Time, when set, is the clock of River and of the workers' deadlines
	// (an approval window's end): tests stub it to move time forward
	// instead of waiting. Nil: the wall clock.
	Time rivertype.TimeGenerator
	// Tracer traces jobs (a span per insert and per job, joined to the
	// trace in the job's metadata) and the execute jobs' calls and
	// completions. Nil or no-op: tracing off.
	Tracer trace.TracerProvider
}

// JobSet is a package's workers, queues and periodic jobs.
type JobSet interface {
	AddWorkers(workers *river.Workers)
	Queues() map[string]river.QueueConfig
	PeriodicJobs() []*river.PeriodicJob
}

// DB is a pool or a transaction.
type DB interface {
	dbutil.DB
	dbutil.Beginner
}

// now is Time's time, or the wall clock's.
func (d *Deps) now() time.Time {
	if d.Time != nil {
		return d.Time.Now()
	}
	return time.Now()
}

func (d *Deps) db() DB {
	if d.DB != nil {
		return d.DB
	}
	return d.Pool
}

// maxGroup caps the jobs whose first (or last) statements go in one round
// trip.
const maxGroup = 100

// groupsAtOnce is how many groups of begins (and of completions) run at
// once: one runs its statement while the other waits for its commit to be
// flushed. With one, the workers could not keep up with the
// single-envelope enqueues of the bench.
const groupsAtOnce = 2

// GroupConns is the size of the pool of Deps.Groups: a connection for each
// group of begins or completions that may run at once.
const GroupConns = 2 * groupsAtOnce

// groupDB is where a group of jobs runs its statement: Deps.Groups, whose
// kept plans save planning the begin (about 0.4 ms, more than its work
// for a few jobs), or, without it, DB planned for the group's jobs. The
// group statements join nothing pairwise, so one kept plan serves a group
// of any size.
func (d *Deps) groupDB() dbutil.DB {
	if d.Groups != nil {
		return d.Groups
	}
	return dbutil.CustomPlans{DBTX: d.db()}
}

// NewExecuteWorker returns the worker of execute jobs.
func NewExecuteWorker(deps *Deps, config *Config) *ExecuteWorker {
	w := &ExecuteWorker{
		deps: deps, cfg: config.WithDefaults(), logger: cmp.Or(deps.Logger, slog.New(slog.DiscardHandler)),
		store: invocationstore.New(nil), grants: grantstore.New(), tracer: tracing.NewTracer(deps.Tracer, tracerName),
		pauseStore: adminstore.New(nil),
	}
	w.orgs = keyed.New(w.cfg.MaxOrgWorkers)
	w.starter.Max, w.completer.Max = maxGroup, maxGroup
	w.starter.Parallel, w.completer.Parallel = groupsAtOnce, groupsAtOnce
	w.starter.Run = batch.Isolated(func(ctx context.Context, args []invocation.BeginArgs) ([]batch.Result[invocation.Begun], error) {
		return w.store.BeginMany(ctx, deps.groupDB(), args)
	})
	w.completer.Run = batch.Isolated(func(ctx context.Context, cs []invocation.Completion) ([]batch.Result[struct{}], error) {
		return w.store.CompleteMany(ctx, deps.groupDB(), cs)
	})
	return w
}

// NewClient builds the River client. With work false it is an insert-only
// client (the API role): it inserts, releases and cancels jobs but never
// works them. With work true it also runs the action queue, the expiry jobs
// and the sweep once started.
func NewClient(deps *Deps, config *Config, work bool) (*river.Client[pgx.Tx], error) {
	rc, err := riverConfig(deps, config, work)
	if err != nil {
		return nil, err
	}
	client, err := river.NewClient(riverpgxv5.New(deps.Pool), rc)
	if err != nil {
		return nil, fmt.Errorf("creating river client: %w", err)
	}
	return client, nil
}

// riverConfig is NewClient's River configuration.
func riverConfig(deps *Deps, config *Config, work bool) (*river.Config, error) {
	cfg := config.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	logger := cmp.Or(deps.Logger, slog.New(slog.DiscardHandler))
	workers := river.NewWorkers()
	river.AddWorker(workers, NewExecuteWorker(deps, cfg))
	river.AddWorker(workers, &ExpireWorker{deps: deps, logger: logger, store: invocationstore.New(nil)})
	river.AddWorker(workers, NewPreviewWorker(deps))
	river.AddWorker(workers, &SweepWorker{deps: deps, logger: logger, store: invocationstore.New(nil)})
	for _, js := range deps.Jobs {
		js.AddWorkers(workers)
	}

	rc := &river.Config{
		Logger:               riverLogger(logger),
		MaxAttempts:          cfg.MaxAttempts,
		RetryPolicy:          &RetryPolicy{Base: cfg.RetryBaseDelay, Max: cfg.RetryMaxDelay},
		JobTimeout:           cfg.JobTimeout(),
		RescueStuckJobsAfter: cfg.RescueAfter,
		FetchPollInterval:    cfg.PollInterval,
		// The client's cooldown is also how often River sends a queue's
		// insert notification: a job inserted within it of the last one
		// sent had none, and once the producer's cooldown had run out it
		// waited for the next poll (a sequential agent's call now and
		// then, up to PollInterval late). So the client's is River's
		// least, a notification for each inserting transaction, and each
		// queue has cfg.FetchCooldown (withCooldown).
		FetchCooldown:       river.FetchCooldownMin,
		ReindexerIndexNames: reindexed(),

		CompletedJobRetentionPeriod: cfg.CompletedJobRetention,
		CancelledJobRetentionPeriod: cfg.CancelledJobRetention,
		DiscardedJobRetentionPeriod: cfg.DiscardedJobRetention,
		Workers:                     workers,
		Test:                        river.TestConfig{Time: deps.Time},
		Middleware:                  tracing.RiverMiddleware(deps.Tracer),
	}
	if work {
		rc.Queues = map[string]river.QueueConfig{
			invocation.QueueActions: {MaxWorkers: cfg.MaxWorkers},
			river.QueueDefault:      {MaxWorkers: 5},
		}
		rc.PeriodicJobs = []*river.PeriodicJob{
			river.NewPeriodicJob(river.PeriodicInterval(cfg.SweepInterval),
				func() (river.JobArgs, *river.InsertOpts) { return SweepArgs{}, nil },
				&river.PeriodicJobOpts{RunOnStart: true, ID: "expire_sweep"}),
		}
		for _, js := range deps.Jobs {
			maps.Copy(rc.Queues, js.Queues())
			rc.PeriodicJobs = append(rc.PeriodicJobs, js.PeriodicJobs()...)
		}
		withCooldown(rc.Queues, cfg.FetchCooldown)
	}
	return rc, nil
}

// withCooldown gives each queue without a fetch cooldown of its own
// cooldown: how long after one fetch a notified job waits for the next.
func withCooldown(queues map[string]river.QueueConfig, cooldown time.Duration) {
	for name, q := range queues {
		q.FetchCooldown = cmp.Or(q.FetchCooldown, cooldown)
		queues[name] = q
	}
}
