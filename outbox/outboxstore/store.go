// Package outboxstore holds the outbox's own SQL besides the invocation
// store's: the read before a submission's writes, the per-session invoke
// rate windows (and the sweep of old ones, which the workers run), and the
// allow override a human's "always" approval writes.
package outboxstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxd/outboxd/internal/platform/dbsqlc"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
)

// Store runs the outbox's statements on the connection it is given.
type Store struct {
	q *dbsqlc.Queries
}

// New returns a Store.
func New() *Store {
	return &Store{q: dbsqlc.New()}
}

// Request is what the read before a submission's writes looks up for one
// request.
type Request struct {
	IdempotencyKey, SessionID, ExternalID string
	AutomationID, SourceID, ActionID      string
}

// Found is the answer of Lookup for one request.
type Found struct {
	// Repeat is true when an earlier request with the same idempotency
	// key in the same session (or, without a key, the same external id in
	// the organization) created an invocation.
	Repeat bool
	// OrgMode and AutomationMode are the action's mode overrides: the
	// organization's default and, when the request names an automation,
	// its override; "" when unset.
	OrgMode, AutomationMode string
}

// Lookup is the one read before requests of org are written, one answer
// per request in their order. Run it in a dbutil.Keyed transaction: a
// generic plan made on an ordinary connection while the table was small
// reads every row of the organization.
func (s *Store) Lookup(ctx context.Context, tx pgx.Tx, org string, reqs []Request) ([]Found, error) {
	p := dbsqlc.SubmitLookupParams{OrganizationID: org}
	for _, r := range reqs {
		p.IdempotencyKeys = append(p.IdempotencyKeys, r.IdempotencyKey)
		p.SessionIds = append(p.SessionIds, r.SessionID)
		p.ExternalIds = append(p.ExternalIds, r.ExternalID)
		p.AutomationIds = append(p.AutomationIds, r.AutomationID)
		p.SourceIds = append(p.SourceIds, r.SourceID)
		p.ActionIds = append(p.ActionIds, r.ActionID)
	}
	rows, err := s.q.SubmitLookup(ctx, tx, p)
	if err != nil {
		return nil, err
	}
	out := make([]Found, len(rows))
	for i, r := range rows {
		out[i] = Found{Repeat: r.Repeat, OrgMode: r.OrgMode, AutomationMode: r.AutomationMode}
	}
	return out, nil
}

// InvokeRateHit counts one invoke for each of sessionIDs (a session listed
// twice made two) in the window that starts at windowStart, and returns
// each session's count in the window. It rolls back with tx.
func (s *Store) InvokeRateHit(ctx context.Context, tx pgx.Tx, org string, sessionIDs []string, windowStart time.Time) (map[string]int, error) {
	rows, err := s.q.InvokeRateHit(ctx, tx, dbsqlc.InvokeRateHitParams{OrganizationID: org, SessionIds: sessionIDs, WindowStart: windowStart})
	if err != nil {
		return nil, err
	}
	counts := make(map[string]int, len(rows))
	for _, r := range rows {
		counts[r.SessionID] = int(r.Count)
	}
	return counts, nil
}

// InvokeRateDeleteBefore drops the invoke rate windows that started
// before before.
func (s *Store) InvokeRateDeleteBefore(ctx context.Context, db dbutil.DB, before time.Time) error {
	return s.q.InvokeRateDeleteBefore(ctx, db, before)
}

// Override is a mode override of one action.
type Override struct {
	OrganizationID, Scope, ScopeID string
	SourceID, ActionID             string
	Mode, UpdatedBy                string
}

// SetMode writes a mode override, replacing the action's override at the
// same scope.
func (s *Store) SetMode(ctx context.Context, tx pgx.Tx, o Override) error {
	return s.q.ModeUpsert(ctx, tx, dbsqlc.ModeUpsertParams{
		OrganizationID: o.OrganizationID, Scope: o.Scope, ScopeID: o.ScopeID,
		SourceID: o.SourceID, ActionID: o.ActionID, Mode: o.Mode, UpdatedBy: o.UpdatedBy,
	})
}
