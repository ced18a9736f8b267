// Package flowstore holds the SQL of the rate limiter (package flow): the
// bucket rows of flow_buckets, each taken, released, drained and read by
// one statement on the limiter's pool.
package flowstore

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxd/outboxd/internal/platform/dbsqlc"
)

// Store runs the limiter's statements on one pool.
type Store struct {
	pool    *pgxpool.Pool
	queries *dbsqlc.Queries
}

// New returns a Store on pool.
func New(pool *pgxpool.Pool) *Store {
	return &Store{pool: pool, queries: dbsqlc.New()}
}

// Take is what Acquire asks of a bucket row: a token for each of Holders,
// in order, while tokens last, and with a positive MaxConcurrency a lease
// for each while slots last. With a positive OrgShare, Orgs[i] is the
// organization of Holders[i] ("" none) and one organization holds at most
// OrgShare leases: a holder that would take it over is refused first.
type Take struct {
	Name, ScopeKey  string
	Burst           float64
	PerSecond       float64
	Holders         []string
	Orgs            []string
	MaxConcurrency  int32
	OrgShare        int32
	LeaseTTLSeconds float64
}

// Taken is the answer to a Take.
type Taken struct {
	// Granted[i] says whether Holders[i] got its token (and slot).
	Granted []bool
	// OverShare[i] says whether Holders[i] was refused because its
	// organization holds its share of the slots.
	OverShare []bool
	// TokenWaitSeconds is how long until the next token, when the tokens
	// ran out.
	TokenWaitSeconds float64
}

// Acquire takes from the bucket row. A row that does not exist yet is
// created full and the take is run again: three statements the first
// time, one afterwards.
func (s *Store) Acquire(ctx context.Context, t Take) (Taken, error) {
	params := dbsqlc.FlowAcquireParams{
		Name:            t.Name,
		ScopeKey:        t.ScopeKey,
		Burst:           t.Burst,
		PerSecond:       t.PerSecond,
		Holders:         t.Holders,
		Orgs:            t.Orgs,
		MaxConcurrency:  t.MaxConcurrency,
		OrgShare:        t.OrgShare,
		LeaseTtlSeconds: t.LeaseTTLSeconds,
	}
	row, err := s.queries.FlowAcquire(ctx, s.pool, params)
	if errors.Is(err, pgx.ErrNoRows) {
		err = s.queries.FlowBucketCreate(ctx, s.pool, dbsqlc.FlowBucketCreateParams{
			Name: t.Name, ScopeKey: t.ScopeKey, Burst: t.Burst,
		})
		if err == nil {
			row, err = s.queries.FlowAcquire(ctx, s.pool, params)
		}
	}
	if err != nil {
		return Taken{}, err
	}
	return Taken{Granted: row.GrantedEach, OverShare: row.OverShare, TokenWaitSeconds: row.TokenWaitSeconds}, nil
}

// Release frees holder's lease in the bucket row; a lease that expired or
// was released already changes nothing.
func (s *Store) Release(ctx context.Context, name, scopeKey, holder string) error {
	return s.queries.FlowRelease(ctx, s.pool, dbsqlc.FlowReleaseParams{
		Name: name, ScopeKey: scopeKey, Holder: holder,
	})
}

// Refund gives back one token to the bucket row, up to burst.
func (s *Store) Refund(ctx context.Context, name, scopeKey string, burst float64) error {
	return s.queries.FlowRefund(ctx, s.pool, dbsqlc.FlowRefundParams{Name: name, ScopeKey: scopeKey, Burst: burst})
}

// Drain empties the bucket row and blocks it until seconds from now; a
// block that ends later stays.
func (s *Store) Drain(ctx context.Context, name, scopeKey string, seconds float64) error {
	return s.queries.FlowDrain(ctx, s.pool, dbsqlc.FlowDrainParams{Name: name, ScopeKey: scopeKey, Seconds: seconds})
}

// State is a bucket row as stored, with the database clock it was read at.
type State struct {
	Name, ScopeKey string
	Tokens         float64
	RefilledAt     time.Time
	BlockedUntil   *time.Time
	ActiveLeases   int
	ReadAt         time.Time
}

// States reads the bucket rows org's calls use: the global rows, org's own
// and its sources'. One query.
func (s *Store) States(ctx context.Context, org string) ([]State, error) {
	rows, err := s.queries.FlowStates(ctx, s.pool, org)
	if err != nil {
		return nil, err
	}
	out := make([]State, len(rows))
	for i, r := range rows {
		out[i] = State{
			Name: r.Name, ScopeKey: r.ScopeKey, Tokens: r.Tokens, RefilledAt: r.RefilledAt,
			BlockedUntil: r.BlockedUntil, ActiveLeases: int(r.ActiveLeases), ReadAt: r.ReadAt,
		}
	}
	return out, nil
}
