// Package waitstore runs the statements of invocation_waits (migration
// 041) on the connection it is given: package waits records the calls
// waiting on an invocation, and the outbox's withdrawal reads them in the
// transaction that locked the invocation's row.
package waitstore

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/outboxd/outboxd/internal/platform/dbsqlc"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
)

var q = dbsqlc.New()

// Start records wait, a call waiting on invocation id that it did not
// create, if the invocation has not ended; ok is false when it has (and
// nothing was recorded). It orders itself with a withdrawal of the
// invocation by its row's lock (see Waited). The call waits at most
// bound: past that, by Postgres's clock, Waited no longer counts it,
// should its process have died before End.
func Start(ctx context.Context, db dbutil.DB, wait, id uuid.UUID, bound time.Duration) (ok bool, err error) {
	n, err := q.InvocationWaitStart(ctx, db, dbsqlc.InvocationWaitStartParams{ID: wait, InvocationID: id, Bound: bound.Seconds()})
	return n > 0, err
}

// End deletes wait, once its call no longer waits.
func End(ctx context.Context, db dbutil.DB, wait uuid.UUID) error {
	return q.InvocationWaitEnd(ctx, db, wait)
}

// Waited reports whether a call other than its creator waits on
// invocation id (within the bound its Start gave). Run it in the transaction that locked the invocation's
// row for update: a Start then either committed before (and is seen) or
// runs after the transaction.
func Waited(ctx context.Context, tx dbutil.DB, id uuid.UUID) (bool, error) {
	return q.InvocationWaited(ctx, tx, id)
}
