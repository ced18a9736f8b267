// Package waits records the MCP calls that wait on an invocation they did
// not create (a retry with the same idempotency key, outboxd_wait) in
// invocation_waits (migration 041), where the withdrawal of a cancelled
// call (outbox.Service.Withdraw) sees them in any API process: a retry
// waiting in one process then still gets the one execution's result when
// the call that created the invocation is cancelled in another.
package waits

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/outboxd/outboxd/internal/domain/invocation/waits/waitstore"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
)

// Registry records waits through the API's tenant pool.
type Registry struct {
	pool   dbutil.DB
	bound  time.Duration
	logger *slog.Logger
}

// New returns a Registry on pool for calls that wait at most wait (the
// API's sync_wait). A record counts for that long and a minute more (the
// answer, and ending the record): a process that dies while a call waits
// keeps the invocation from being withdrawn no longer than that.
func New(pool dbutil.DB, wait time.Duration, logger *slog.Logger) *Registry {
	return &Registry{pool: pool, bound: wait + time.Minute, logger: logger}
}

// Start records that a call waits on org's invocation id, and returns
// what ends the record, when the call ends. An invocation that has ended
// records nothing. The insert takes a share lock on the invocation's row,
// which orders it with a withdrawal: either the withdrawal sees the wait,
// or the wait comes after the withdrawal committed.
func (r *Registry) Start(ctx context.Context, org string, id uuid.UUID) (done func(), err error) {
	ctx = dbutil.WithOrg(ctx, org)
	wait := uuid.New()
	if ok, err := waitstore.Start(ctx, r.pool, wait, id, r.bound); err != nil || !ok {
		return func() {}, err
	}
	return func() {
		// The call's own context may have ended: its values (the
		// trace) are kept.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := waitstore.End(ctx, r.pool, wait); err != nil {
			r.logger.WarnContext(ctx, "ending a wait on an invocation", "invocation_id", id, "error", err)
		}
	}, nil
}
