package outboxstore

import (
	"context"

	"github.com/google/uuid"

	"github.com/outboxd/outboxd/internal/platform/dbsqlc"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
)

// WaitStart records wait, a call waiting on invocation id that it did not
// create, if the invocation has not ended; ok is false when it has (and
// nothing was recorded). It orders itself with a withdrawal of the
// invocation by its row's lock (see Waited).
func (s *Store) WaitStart(ctx context.Context, db dbutil.DB, wait, id uuid.UUID) (ok bool, err error) {
	n, err := s.q.InvocationWaitStart(ctx, db, dbsqlc.InvocationWaitStartParams{ID: wait, InvocationID: id})
	return n > 0, err
}

// WaitEnd deletes wait, once its call no longer waits.
func (s *Store) WaitEnd(ctx context.Context, db dbutil.DB, wait uuid.UUID) error {
	return s.q.InvocationWaitEnd(ctx, db, wait)
}

// Waited reports whether a call other than its creator waits on
// invocation id. Run it in the transaction that locked the invocation's
// row for update: a WaitStart then either committed before (and is seen)
// or runs after the transaction.
func (s *Store) Waited(ctx context.Context, tx dbutil.DB, id uuid.UUID) (bool, error) {
	return s.q.InvocationWaited(ctx, tx, id)
}
