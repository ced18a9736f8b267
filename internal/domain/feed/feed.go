// Package feed serves the organizations' event feeds: the notices read
// from invocation_events from a cursor, and the doorbell that rings when
// new ones may have been written, by any process (the LISTEN waiter). The
// event streams read it, and the outbox waits through it for the workers
// that finish its invocations. The events are read through the invocation
// store; the waiter's registrations in event_listeners are feedstore's.
package feed

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/invocation/invocationstore"
	"github.com/outboxd/outboxd/internal/platform/keyed"
	"github.com/outboxd/outboxd/internal/platform/telemetry"
)

// Params select the events of a feed.
type Params = invocation.FeedParams

// ErrUnknownPosition: a cursor names an event the organization does not
// have, or a position no stream can have sent yet.
var ErrUnknownPosition = errors.New("unknown feed position")

// Deps are the feed's collaborators.
type Deps struct {
	// Pool is the API's tenant pool: every read of the events runs
	// through it, so it sees the caller's organization only.
	Pool *pgxpool.Pool
	// Listeners is the pool the waiter registers and LISTENs through, for
	// every organization with subscribers: the owner's, not the tenant
	// pool, whose sessions see one organization's listeners only.
	Listeners *pgxpool.Pool
	Metrics   *telemetry.Metrics
	Logger    *slog.Logger
	// MaxOrgReads bounds the feed reads (Feed) one organization has
	// running at once: its streams then hold at most that many of Pool's
	// connections. Default a quarter of Pool's, at least 1.
	MaxOrgReads int
}

// Service reads the feeds and rings their doorbells.
type Service struct {
	pool    *pgxpool.Pool
	metrics *telemetry.Metrics
	store   *invocationstore.Store
	waiter  *waiter
	// reads bounds the feed reads one organization has running at once,
	// so that its event streams, however many (each reads when its
	// doorbell rings, all at once, and every Poll), hold at most that
	// many of the pool's connections and queue among themselves, not
	// ahead of the other organizations' requests.
	reads *keyed.Limiter
}

// New returns a Service. Call Run to start the listener.
func New(deps *Deps) *Service {
	metrics := deps.Metrics
	if metrics == nil {
		metrics = telemetry.NewNop()
	}
	maxReads := deps.MaxOrgReads
	if maxReads <= 0 {
		maxReads = 1
		if deps.Pool != nil {
			maxReads = max(1, int(deps.Pool.Config().MaxConns)/4)
		}
	}
	return &Service{
		reads:   keyed.New(maxReads),
		pool:    deps.Pool,
		metrics: metrics,
		store:   invocationstore.New(nil),
		waiter:  newWaiter(deps.Listeners, cmp.Or(deps.Logger, slog.New(slog.DiscardHandler))),
	}
}

// Run listens for the events' notifications until ctx is done.
func (s *Service) Run(ctx context.Context) { s.waiter.run(ctx) }

// Subscribe returns a doorbell that rings when an event of the organization
// may have been written (by any process), and a function to hang up. The
// subscriber reads the events with Feed from its own cursor, after
// Subscribe returns: from then on the organization's events are announced.
func (s *Service) Subscribe(ctx context.Context, org string) (<-chan struct{}, func()) {
	ch, unsubscribe := s.waiter.subscribeOrg(ctx, org)
	s.metrics.StreamSubscribers.Inc()
	return ch, func() {
		unsubscribe()
		s.metrics.StreamSubscribers.Dec()
	}
}

// CatalogChannel is the Postgres channel a change to what shapes an
// organization's catalog is announced on, with the organization's id as
// the payload (migration 026: its action modes, credentials stored or
// removed, connectors and databases).
const CatalogChannel = "outboxd_catalog_changes"

// SubscribeCatalog returns a doorbell that rings when the organization's
// catalog may have changed (by any process, or while notifications may
// have been missed), and a function to hang up.
func (s *Service) SubscribeCatalog(ctx context.Context, org string) (<-chan struct{}, func()) {
	return s.waiter.subscribeCatalog(ctx, org)
}

// SubscribeInvocation returns a doorbell that rings when invocation id of
// org may have finished, and a function to hang up. The organization's
// events are announced once it returns.
func (s *Service) SubscribeInvocation(ctx context.Context, org string, id uuid.UUID) (<-chan struct{}, func()) {
	return s.waiter.subscribe(ctx, org, id)
}

// Feed returns the notices after p.After, oldest first; held says that
// later events exist but are not yet safe to deliver, so ask again soon.
// It waits its turn among the organization's reads (Deps.MaxOrgReads).
func (s *Service) Feed(ctx context.Context, p *Params) ([]invocation.FeedItem, bool, error) {
	done, err := s.reads.Wait(ctx, p.Org)
	if err != nil {
		return nil, false, err
	}
	defer done()
	return s.store.Feed(ctx, s.pool, p)
}

// Cursor returns where a feed resumes: after the organization's event
// afterID (0: before every event). An id the organization does not have
// is ErrUnknownPosition.
func (s *Service) Cursor(ctx context.Context, org string, afterID int64) (invocation.Cursor, error) {
	if afterID == 0 {
		return invocation.Cursor{}, nil
	}
	c, err := s.store.FeedCursor(ctx, s.pool, org, afterID)
	if errors.Is(err, invocation.ErrEventNotFound) {
		return c, fmt.Errorf("%w: %w", ErrUnknownPosition, err)
	}
	return c, err
}

// Resume returns where a feed resumes from a position it sent. A position
// no stream can have sent yet (beyond the horizon) is ErrUnknownPosition.
func (s *Service) Resume(ctx context.Context, pos invocation.Cursor) (invocation.Cursor, error) {
	now, err := s.Now(ctx)
	if err != nil {
		return pos, err
	}
	if pos.XID >= now.XID {
		return pos, fmt.Errorf("%w: that position is beyond the present", ErrUnknownPosition)
	}
	return pos, nil
}

// Now returns the cursor of a feed that starts now.
func (s *Service) Now(ctx context.Context) (invocation.Cursor, error) {
	return s.store.FeedNow(ctx, s.pool)
}
