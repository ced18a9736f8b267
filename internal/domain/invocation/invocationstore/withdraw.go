package invocationstore

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/platform/dbsqlc"
)

// Withdraw is Cancel with a reason on the invocation's cancelled event:
// what a token revocation does to the invocations the revoked tokens asked
// for that have not started (package revocation). The invocation and its
// job change in tx; one that has started or ended is errs.Conflict.
func (s *Store) Withdraw(ctx context.Context, tx pgx.Tx, id uuid.UUID, actor, reason string) (invocation.Invocation, error) {
	r, err := s.q.InvocationCancel(ctx, tx, dbsqlc.InvocationCancelParams{ID: id, Actor: nilIfEmpty(actor), Reason: nilIfEmpty(reason)})
	return s.cancelJob(ctx, tx)(transitioned(r, err, id, "withdrawing"))
}
