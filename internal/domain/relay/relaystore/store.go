// Package relaystore stores the relay's cursors (relay_cursors): for each
// consumer, the last notice relayed to it. It runs its statements in the
// relay's transaction, the one that inserts the consumer's jobs.
package relaystore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/platform/dbsqlc"
)

// Store reads and moves the relay's cursors.
type Store struct {
	q *dbsqlc.Queries
}

// New returns a Store.
func New() *Store {
	return &Store{q: dbsqlc.New()}
}

// Lock returns consumer's cursor, locked until tx ends; a consumer without
// one gets one at the horizon first, so it relays what becomes visible
// from now on.
func (s *Store) Lock(ctx context.Context, tx pgx.Tx, consumer string) (invocation.Cursor, error) {
	if err := s.q.RelayCursorStart(ctx, tx, consumer); err != nil {
		return invocation.Cursor{}, fmt.Errorf("starting the %s relay cursor: %w", consumer, err)
	}
	cur, err := s.q.RelayCursorLock(ctx, tx, consumer)
	if err != nil {
		return invocation.Cursor{}, fmt.Errorf("locking the %s relay cursor: %w", consumer, err)
	}
	return invocation.Cursor{XID: cur.AfterXid, ID: cur.AfterID}, nil
}

// Advance moves consumer's cursor, locked by Lock in tx, to next.
func (s *Store) Advance(ctx context.Context, tx pgx.Tx, consumer string, next invocation.Cursor) error {
	err := s.q.RelayCursorAdvance(ctx, tx, dbsqlc.RelayCursorAdvanceParams{
		Consumer: consumer, AfterXid: strconv.FormatInt(next.XID, 10), AfterID: next.ID,
	})
	if err != nil {
		return fmt.Errorf("moving the %s relay cursor: %w", consumer, err)
	}
	return nil
}
