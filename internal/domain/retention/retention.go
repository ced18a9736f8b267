// Package retention deletes what outboxd no longer needs to keep: finished
// invocations with their events, finished webhook deliveries, and the
// oldest entries of each organization's audit trail, once they are older
// than their configured retention; and, whatever the retention, the
// webhook signing secrets rotations replaced, once their overlap has
// ended (they sign nothing any more). A periodic River job in the
// worker role runs it, in small batches, each its own short transaction,
// through the owner's pool (every organization). River deletes its own
// finished jobs (worker.Config's job retention settings). It also purges
// everything of one organization (Purge, `outboxd org purge`).
//
// A table is added by one entry in Service.targets: how to list the scopes
// it is deleted in (organizations, endpoints) and how to delete one batch
// of a scope's rows older than a cutoff.
package retention

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"

	"github.com/outboxd/outboxd/internal/domain/audit"
	"github.com/outboxd/outboxd/internal/domain/retention/retentionstore"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
)

// Forever keeps rows forever: a retention of Forever deletes nothing. The
// configuration key's 0 maps to it.
const Forever time.Duration = -1

// Defaults of Config.
const (
	DefaultInvocations       = 90 * 24 * time.Hour
	DefaultWebhookDeliveries = 30 * 24 * time.Hour
	DefaultAuditEntries      = 400 * 24 * time.Hour
	DefaultInterval          = 10 * time.Minute
	DefaultBatch             = 1000
	DefaultBudget            = 15 * time.Second
)

// Config configures retention.
type Config struct {
	// Invocations is how long a finished invocation (completed, failed,
	// denied, expired, skipped, cancelled) is kept after it finished, with
	// its events; Forever keeps them. Default 90 days.
	Invocations time.Duration
	// WebhookDeliveries is how long a finished webhook delivery
	// (delivered, dead, cancelled) is kept after it was created; Forever
	// keeps them. Default 30 days.
	WebhookDeliveries time.Duration
	// AuditEntries is how long an audit trail's entry is kept after it was
	// recorded; Forever keeps them. Entries go from the front of each
	// organization's chain, by whole days (UTC), and its anchor moves past
	// them in the same transaction (internal/domain/audit, Pruner).
	// Default 400 days.
	AuditEntries time.Duration
	// Interval is how often retention runs. Default 10m.
	Interval time.Duration
	// Batch is how many rows one delete statement removes at most, each in
	// its own transaction. Default 1000.
	Batch int
	// Budget bounds how long one run deletes: past it, each table gets
	// one more batch at most and the next run goes on, from the
	// organization (or endpoint) after the one it ran out on, so that
	// one organization's backlog does not hold the others'. Keep it under
	// worker.rescue_after (30s by default), past which River takes a
	// running job for orphaned and runs it again. Default 15s.
	Budget time.Duration
}

// WithDefaults returns a copy with unset fields defaulted.
func (c *Config) WithDefaults() *Config {
	return &Config{
		Invocations:       cmp.Or(c.Invocations, DefaultInvocations),
		WebhookDeliveries: cmp.Or(c.WebhookDeliveries, DefaultWebhookDeliveries),
		AuditEntries:      cmp.Or(c.AuditEntries, DefaultAuditEntries),
		Interval:          cmp.Or(c.Interval, DefaultInterval),
		Batch:             cmp.Or(c.Batch, DefaultBatch),
		Budget:            cmp.Or(c.Budget, DefaultBudget),
	}
}

// Validate reports the first setting New would refuse. Every role checks
// it at start, though only worker processes run retention: an API process
// shows the settings (Keep), and a configuration its workers refuse should
// not start half the deployment.
func (c *Config) Validate() error { return c.WithDefaults().validate() }

func (c *Config) validate() error {
	switch {
	case c.Invocations < 0 && c.Invocations != Forever:
		return errors.New("retention.invocations must not be negative (0 keeps them forever)")
	case c.WebhookDeliveries < 0 && c.WebhookDeliveries != Forever:
		return errors.New("retention.webhook_deliveries must not be negative (0 keeps them forever)")
	case c.AuditEntries < 0 && c.AuditEntries != Forever:
		return errors.New("retention.audit_entries must not be negative (0 keeps them forever)")
	case c.AuditEntries > 0 && c.AuditEntries < 24*time.Hour:
		return errors.New("retention.audit_entries must be at least 24h: audit entries are deleted by whole days")
	case c.Interval < time.Second:
		return errors.New("retention.interval must be at least 1s")
	case c.Batch < 1 || c.Batch > 100_000:
		return errors.New("retention.batch must be between 1 and 100000")
	case c.Budget < 0:
		return errors.New("retention.budget must not be negative")
	}
	return nil
}

// Deps are what retention needs.
type Deps struct {
	// Pool is the owner's: retention deletes every organization's rows.
	Pool DB
	// Registerer takes retention's metrics; nil registers none.
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	// Now is the clock cutoffs are taken from; nil: the wall clock.
	Now func() time.Time
}

// DB is a pool (or, in tests, a transaction).
type DB interface {
	dbutil.DB
	dbutil.Beginner
}

// Service runs retention.
type Service struct {
	deps    *Deps
	cfg     *Config
	store   *retentionstore.Store
	audit   *audit.Pruner
	logger  *slog.Logger
	metrics *Metrics

	// resume is, by target, the scope a run whose budget ran out left
	// off at: the next run starts there, so that one organization's
	// backlog does not take every run's budget while the others' rows
	// outlive their retention.
	mu     sync.Mutex
	resume map[string]string
}

// Metrics are retention's.
type Metrics struct {
	// Deleted is outboxd_retention_deleted_total{table}.
	Deleted *prometheus.CounterVec
	// LastRun is outboxd_retention_last_run_timestamp_seconds.
	LastRun prometheus.Gauge
	// LastRunDeleted is outboxd_retention_last_run_deleted{table}.
	LastRunDeleted *prometheus.GaugeVec
}

// Metrics returns the service's metrics.
func (s *Service) Metrics() *Metrics { return s.metrics }

// New returns a Service.
func New(deps *Deps, config *Config) (*Service, error) {
	cfg := config.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Service{
		deps: deps, cfg: cfg, store: retentionstore.New(), audit: audit.NewPruner(),
		logger:  cmp.Or(deps.Logger, slog.New(slog.DiscardHandler)),
		metrics: &Metrics{}, resume: map[string]string{}}
	m := s.metrics
	m.Deleted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "outboxd_retention_deleted_total",
		Help: "Rows deleted by retention, by table.",
	}, []string{"table"})
	m.LastRun = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "outboxd_retention_last_run_timestamp_seconds",
		Help: "When retention last finished a run (Unix seconds).",
	})
	m.LastRunDeleted = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "outboxd_retention_last_run_deleted",
		Help: "Rows deleted by retention's last run, by table.",
	}, []string{"table"})
	for _, t := range Tables {
		m.Deleted.WithLabelValues(t)
		m.LastRunDeleted.WithLabelValues(t)
	}
	if deps.Registerer != nil {
		for _, c := range []prometheus.Collector{m.Deleted, m.LastRun, m.LastRunDeleted} {
			if err := deps.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("registering retention metrics: %w", err)
			}
		}
	}
	return s, nil
}

// Tables are the table labels of retention's metrics and of Report.
var Tables = []string{"action_invocations", "invocation_events", "webhook_deliveries", "audit_entries"}

// target is one kind of row retention deletes: the rows of each scope
// (organization, endpoint) older than keep, a batch at a time.
type target struct {
	// name labels the target in logs; its rows are counted by table.
	name string
	keep time.Duration
	// scopes lists what the rows are deleted in, each with a statement of
	// its own, so that each uses an index that starts with the scope.
	scopes func(ctx context.Context, db dbutil.DB) ([]scope, error)
	// deleteBatch deletes up to limit rows of scope older than cutoff, and
	// returns how many rows of the target it deleted (compared with limit)
	// and the rows deleted by table.
	deleteBatch func(ctx context.Context, tx pgx.Tx, scope string, cutoff time.Time, limit int) (int64, map[string]int64, error)
}

// scope is an organization, or one of its parts (a webhook endpoint).
type scope struct {
	key, org string
}

// targets lists what retention deletes. Another table is one more entry.
func (s *Service) targets() []target {
	return []target{
		{
			name: "invocations", keep: s.cfg.Invocations,
			scopes: func(ctx context.Context, db dbutil.DB) ([]scope, error) {
				orgs, err := s.store.InvocationOrgs(ctx, db)
				out := make([]scope, len(orgs))
				for i, org := range orgs {
					out[i] = scope{key: org, org: org}
				}
				return out, err
			},
			deleteBatch: func(ctx context.Context, tx pgx.Tx, org string, cutoff time.Time, limit int) (int64, map[string]int64, error) {
				invs, events, err := s.store.DeleteInvocations(ctx, tx, org, cutoff, limit)
				return invs, map[string]int64{"action_invocations": invs, "invocation_events": events}, err
			},
		},
		{
			name: "webhook_deliveries", keep: s.cfg.WebhookDeliveries,
			scopes: func(ctx context.Context, db dbutil.DB) ([]scope, error) {
				hooks, err := s.store.Webhooks(ctx, db)
				out := make([]scope, len(hooks))
				for i, h := range hooks {
					out[i] = scope{key: h.ID.String(), org: h.Org}
				}
				return out, err
			},
			deleteBatch: func(ctx context.Context, tx pgx.Tx, webhook string, cutoff time.Time, limit int) (int64, map[string]int64, error) {
				id, err := uuid.Parse(webhook)
				if err != nil {
					return 0, nil, err
				}
				n, err := s.store.DeleteWebhookDeliveries(ctx, tx, id, cutoff, limit)
				return n, map[string]int64{"webhook_deliveries": n}, err
			},
		},
		{
			name: "audit_entries", keep: s.cfg.AuditEntries,
			scopes: func(ctx context.Context, db dbutil.DB) ([]scope, error) {
				orgs, err := s.audit.Orgs(ctx, db)
				out := make([]scope, len(orgs))
				for i, org := range orgs {
					out[i] = scope{key: org, org: org}
				}
				return out, err
			},
			deleteBatch: func(ctx context.Context, tx pgx.Tx, org string, cutoff time.Time, limit int) (int64, map[string]int64, error) {
				// By whole days: a chain loses its front at most once a day,
				// each time with an audit.prune entry, rather than an entry
				// or two at every run.
				n, err := s.audit.PruneTx(ctx, tx, org, cutoff.UTC().Truncate(24*time.Hour), limit)
				return n, map[string]int64{"audit_entries": n}, err
			},
		},
	}
}

// Report is what one run deleted.
type Report struct {
	// Deleted counts the rows deleted by table.
	Deleted map[string]int64
	// Batches counts the delete statements by target, and LargestBatch
	// the most rows one of them deleted.
	Batches      map[string]int
	LargestBatch int64
	// Unfinished lists the targets the run's budget ran out on before
	// their last batch came back short: the next run goes on with them.
	Unfinished []string
	// ClearedSecrets counts the webhooks whose previous signing secret
	// the run forgot, its overlap over.
	ClearedSecrets int64
}

// Run deletes, for each target, the rows past its retention, a batch per
// transaction, until a batch comes back short or the run's budget is spent
// (each target still runs a batch).
func (s *Service) Run(ctx context.Context) (*Report, error) {
	start := time.Now()
	now := time.Now
	if s.deps.Now != nil {
		now = s.deps.Now
	}
	rep := &Report{Deleted: map[string]int64{}, Batches: map[string]int{}}
	for _, t := range Tables {
		rep.Deleted[t] = 0
	}
	deadline := time.Now().Add(s.cfg.Budget)
	var errs []error
	// A secret no longer valid is not kept, whatever the retention.
	if n, err := s.store.ClearPreviousSecrets(ctx, s.deps.Pool); err != nil {
		errs = append(errs, err)
	} else {
		rep.ClearedSecrets = n
	}
	for _, t := range s.targets() {
		if t.keep <= 0 {
			continue
		}
		byOrg := map[[2]string]int64{}
		err := s.runTarget(ctx, t, now().Add(-t.keep), deadline, rep, byOrg)
		if err != nil {
			errs = append(errs, fmt.Errorf("retention of %s: %w", t.name, err))
		}
		// What was deleted is recorded even when a later batch failed.
		if err := s.record(ctx, byOrg); err != nil {
			errs = append(errs, err)
		}
	}
	for table, n := range rep.Deleted {
		s.metrics.LastRunDeleted.WithLabelValues(table).Set(float64(n))
	}
	s.metrics.LastRun.SetToCurrentTime()
	attrs := []any{"duration_ms", time.Since(start).Milliseconds()}
	for _, table := range Tables {
		attrs = append(attrs, table, rep.Deleted[table])
	}
	if len(rep.Unfinished) > 0 {
		attrs = append(attrs, "unfinished", rep.Unfinished)
	}
	if rep.ClearedSecrets > 0 {
		attrs = append(attrs, "webhook_previous_secrets_cleared", rep.ClearedSecrets)
	}
	err := errors.Join(errs...)
	if err != nil {
		s.logger.ErrorContext(ctx, "retention run failed", append(attrs, "error", err)...)
	} else {
		s.logger.InfoContext(ctx, "retention run", attrs...)
	}
	return rep, err
}

// record adds the rows deleted by organization and table to what the
// operations page shows.
func (s *Service) record(ctx context.Context, byOrg map[[2]string]int64) error {
	var runs []retentionstore.Run
	for k, n := range byOrg {
		if n > 0 {
			runs = append(runs, retentionstore.Run{Org: k[0], Table: k[1], LastDeleted: n})
		}
	}
	if len(runs) == 0 {
		return nil
	}
	return s.store.Record(context.WithoutCancel(ctx), s.deps.Pool, runs)
}

// OrgRuns returns what retention deleted of org, by table, through db (the
// tenant pool serves: the rows are the organization's).
func OrgRuns(ctx context.Context, db dbutil.DB, org string) ([]retentionstore.Run, error) {
	return retentionstore.New().RunsOf(ctx, db, org)
}

func (s *Service) runTarget(ctx context.Context, t target, cutoff, deadline time.Time, rep *Report, byOrg map[[2]string]int64) error {
	scopes, err := t.scopes(ctx, s.deps.Pool)
	if err != nil {
		return err
	}
	// From where the last run left off, round the scopes.
	s.mu.Lock()
	resume := s.resume[t.name]
	s.mu.Unlock()
	if i := slices.IndexFunc(scopes, func(sc scope) bool { return sc.key == resume }); i > 0 {
		scopes = slices.Concat(scopes[i:], scopes[:i])
	}
	for i, scope := range scopes {
		for batches := 0; ; batches++ {
			if rep.Batches[t.name] > 0 && !time.Now().Before(deadline) {
				rep.Unfinished = append(rep.Unfinished, t.name)
				// The next run starts after a scope that had a batch
				// of this one, at a scope that had none.
				next := scopes[(i+min(batches, 1))%len(scopes)]
				s.mu.Lock()
				s.resume[t.name] = next.key
				s.mu.Unlock()
				return nil
			}
			var n int64
			var counts map[string]int64
			err := dbutil.WithTx(ctx, s.deps.Pool, func(ctx context.Context, tx pgx.Tx) error {
				var err error
				n, counts, err = t.deleteBatch(ctx, tx, scope.key, cutoff, s.cfg.Batch)
				return err
			})
			if err != nil {
				return err
			}
			rep.Batches[t.name]++
			rep.LargestBatch = max(rep.LargestBatch, n)
			for table, c := range counts {
				byOrg[[2]string{scope.org, table}] += c
				rep.Deleted[table] += c
				s.metrics.Deleted.WithLabelValues(table).Add(float64(c))
			}
			if n < int64(s.cfg.Batch) {
				break
			}
		}
	}
	s.mu.Lock()
	delete(s.resume, t.name)
	s.mu.Unlock()
	return nil
}

// Args is retention's periodic job.
type Args struct{}

// Kind implements river.JobArgs.
func (Args) Kind() string { return "retention" }

// Worker works Args.
type Worker struct {
	river.WorkerDefaults[Args]
	svc *Service
}

// Work implements river.Worker.
func (w *Worker) Work(ctx context.Context, _ *river.Job[Args]) error {
	_, err := w.svc.Run(ctx)
	return err
}

// Timeout gives a run its budget and room for the batches past it.
func (w *Worker) Timeout(*river.Job[Args]) time.Duration {
	return w.svc.cfg.Budget + time.Minute
}

// AddWorkers implements worker.JobSet.
func (s *Service) AddWorkers(workers *river.Workers) {
	river.AddWorker(workers, &Worker{svc: s})
}

// Queues implements worker.JobSet: the job runs on River's default queue.
func (s *Service) Queues() map[string]river.QueueConfig { return nil }

// PeriodicJobs implements worker.JobSet: a run every Interval, the first
// soon after start. River's leader alone inserts periodic jobs, so one
// process runs it at a time.
func (s *Service) PeriodicJobs() []*river.PeriodicJob {
	return []*river.PeriodicJob{river.NewPeriodicJob(river.PeriodicInterval(s.cfg.Interval),
		func() (river.JobArgs, *river.InsertOpts) { return Args{}, nil },
		&river.PeriodicJobOpts{RunOnStart: true, ID: "retention"})}
}

// Keep returns how long each table of Tables keeps finished rows, 0 for
// forever: what the operations page shows beside what was deleted.
func (c *Config) Keep() map[string]time.Duration {
	cfg := c.WithDefaults()
	keep := func(d time.Duration) time.Duration { return max(d, 0) }
	return map[string]time.Duration{
		"action_invocations": keep(cfg.Invocations),
		"invocation_events":  keep(cfg.Invocations),
		"webhook_deliveries": keep(cfg.WebhookDeliveries),
		"audit_entries":      keep(cfg.AuditEntries),
	}
}
