package outbox

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"go.opentelemetry.io/otel/trace"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/domain/audit"
	"github.com/outboxd/outboxd/internal/domain/catalog"
	"github.com/outboxd/outboxd/internal/domain/fairness"

	"github.com/outboxd/outboxd/internal/domain/flow"
	"github.com/outboxd/outboxd/internal/domain/grant"
	"github.com/outboxd/outboxd/internal/domain/intent"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/invocation/invocationstore"
	"github.com/outboxd/outboxd/internal/domain/revocation"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/internal/platform/secretbox"
	"github.com/outboxd/outboxd/internal/platform/telemetry"
	"github.com/outboxd/outboxd/internal/platform/tracing"
	"github.com/outboxd/outboxd/outbox/outboxstore"
	"github.com/outboxd/outboxd/policy"
)

// Config configures the write side.
type Config struct {
	// InteractiveTTL is how long an interactive session's approval request
	// stays open. Default 5m.
	InteractiveTTL time.Duration
	// UnattendedTTL is the approval window when the request comes from an
	// automation (token or envelope). Default 24h.
	UnattendedTTL time.Duration
	// PendingPerSession caps pending invocations per session. Default 10.
	PendingPerSession int
	// InvokesPerMinute limits invokes per session, across all API
	// processes. Default 60.
	InvokesPerMinute int
	// SyncWait bounds how long an allow-mode invoke waits for its worker
	// before answering 202. Default 30s.
	SyncWait time.Duration
	// RetryBySource sets a retry policy per source id (an envelope may
	// override it). Unset fields use the worker's defaults.
	RetryBySource map[string]invocation.Retry
	// FairRate and FairBurst are each organization's fair rate of new
	// invocations in this process, per second and at once: the jobs of
	// those past it queue behind every other organization's (package
	// fairness). Default 100 and 1000.
	FairRate  float64
	FairBurst int
}

// WithDefaults returns a copy with unset fields defaulted.
func (c *Config) WithDefaults() *Config {
	return &Config{
		InteractiveTTL:    cmp.Or(c.InteractiveTTL, 5*time.Minute),
		UnattendedTTL:     cmp.Or(c.UnattendedTTL, 24*time.Hour),
		PendingPerSession: cmp.Or(c.PendingPerSession, 10),
		InvokesPerMinute:  cmp.Or(c.InvokesPerMinute, 60),
		SyncWait:          cmp.Or(c.SyncWait, 30*time.Second),
		FairRate:          cmp.Or(c.FairRate, 100),
		FairBurst:         cmp.Or(c.FairBurst, 1000),

		RetryBySource: c.RetryBySource,
	}
}

func (c *Config) validate() error {
	switch {
	case c.InteractiveTTL <= 0 || c.UnattendedTTL <= 0:
		return errors.New("approval TTLs must be positive")
	case c.PendingPerSession < 1:
		return errors.New("limits.pending_per_session must be at least 1")
	case c.InvokesPerMinute < 1:
		return errors.New("limits.invokes_per_minute must be at least 1")
	case !(c.FairRate > 0) || c.FairBurst < 1:
		return errors.New("limits.org_fair_rate must be positive and limits.org_fair_burst at least 1")
	}
	return nil
}

// Deps are the service's collaborators.
type Deps struct {
	Pool    *pgxpool.Pool
	River   *river.Client[pgx.Tx]
	Sources *catalog.Catalog
	// Box seals the exact params of an invocation whose stored params are
	// redacted; the worker opens them with the same key.
	Box *secretbox.Box
	// Intents computes the sealed intents of invocations that wait for a
	// human (package intent); nil records none.
	Intents *intent.Intents
	// Flow holds the configured rate buckets (names are validated against
	// it); nil disables flow control.
	Flow    *flow.Limiter
	Metrics *telemetry.Metrics
	Logger  *slog.Logger
	// Waiter rings when an invocation may have finished, in any process
	// (the feed's LISTEN waiter); Wait polls alone without it.
	Waiter Waiter
	// Tracer traces the enqueue transactions and the decisions, and the
	// trace context of each enqueue is stored with its invocation. Nil or
	// no-op: tracing off.
	Tracer trace.TracerProvider
	// Approvals counts the approvals of each pending invocation and says
	// who may decide it (internal/domain/approvers); nil: one approval
	// by anyone the API admits releases it.
	Approvals ApprovalGate
	// Trail records each human decision (approval, denial) in the audit
	// trail, with the intent digest's first characters; nil records none.
	Trail audit.Recorder
}

// ApprovalGate records approvals in the decision's transaction, where the
// invocation's row is locked.
type ApprovalGate interface {
	// Approve records userID's approval of inv and reports whether the
	// approvals now suffice to release it, and how many it needs.
	Approve(ctx context.Context, tx pgx.Tx, inv *invocation.Invocation, userID, role string) (done bool, required int, err error)
	// MayDeny refuses a denial by someone who may not decide inv.
	MayDeny(ctx context.Context, tx pgx.Tx, inv *invocation.Invocation, userID, role string) error
	// Required returns how many distinct approvals an invocation of tier
	// needs in org now.
	Required(ctx context.Context, db dbutil.DB, org string, tier policy.Tier) (int, error)
}

// Waiter tells Wait when to read an invocation again.
type Waiter interface {
	// SubscribeInvocation returns a channel that receives when invocation
	// id of org may have finished, and a function to hang up.
	SubscribeInvocation(ctx context.Context, org string, id uuid.UUID) (<-chan struct{}, func())
}

// Service is the write side: invoke, enqueue, approve, deny, cancel, and the
// reads the API needs.
type Service struct {
	deps      Deps
	cfg       *Config
	logger    *slog.Logger
	queries   *outboxstore.Store
	validator *executors.Validator
	store     *invocationstore.Store
	groups    sync.Map // organization → its requests' group commit (see submit)
	reads     sync.Map // organization → its waits' shared reads (see wait)
	grants    *grant.Keeper
	fair      *fairness.Meter // which organizations' new jobs queue behind
	tracer    tracing.Tracer
	// stopWaits is closed by StopWaiting: every wait answers then.
	stopWaits chan struct{}
	stopOnce  sync.Once
}

// StopWaiting ends every wait for a result, now and later, as a process
// does when it shuts down: each answers with where its invocation stands
// (its id, to poll), rather than holding the shutdown or being cut off by
// it without an answer.
func (s *Service) StopWaiting() {
	s.stopOnce.Do(func() { close(s.stopWaits) })
}

// New returns a Service.
func New(deps *Deps, config *Config) (*Service, error) {
	cfg := config.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	logger := cmp.Or(deps.Logger, slog.New(slog.DiscardHandler))
	if deps.Metrics == nil {
		deps.Metrics = telemetry.NewNop()
	}
	return &Service{
		deps:      *deps,
		cfg:       cfg,
		logger:    logger,
		queries:   outboxstore.New(),
		validator: executors.NewValidator(),
		store:     invocationstore.NewRecording(deps.River, revocation.Refusals{}),
		grants:    grant.NewKeeper(),
		fair:      fairness.NewMeter(cfg.FairRate, cfg.FairBurst),
		tracer:    tracing.NewTracer(deps.Tracer, "github.com/outboxd/outboxd/outbox"),
		stopWaits: make(chan struct{}),
	}, nil
}
