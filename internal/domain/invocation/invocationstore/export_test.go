package invocationstore

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/outboxd/outboxd/internal/domain/invocation"
)

// The one-invocation forms of CreateMany, BeginMany and CompleteMany, for
// tests.

// ErrDuplicate: Create found an invocation with the same idempotency key or
// external id.
var ErrDuplicate = errors.New("an invocation with this key exists")

// Create records a new invocation, its jobs and its created event.
func (s *Store) Create(ctx context.Context, tx pgx.Tx, p *invocation.CreateParams) (invocation.Invocation, error) {
	created, err := s.CreateMany(ctx, tx, []*invocation.CreateParams{p})
	if err != nil {
		return invocation.Invocation{}, err
	}
	if created[0] == nil {
		return invocation.Invocation{}, ErrDuplicate
	}
	return *created[0], nil
}

// Begin is a job's first step before its call, in one statement: it returns
// the invocation with its RunContext and, when it is approved or executing
// and none of the gates can apply (no do-not-contact pattern, no quiet
// window, must_run_before not passed), marks it executing for attempt, as
// Start does. started is false when it did not: the invocation is in
// another state, or the gates must be checked before Start.
func (s *Store) Begin(ctx context.Context, db DB, id uuid.UUID, attempt int) (inv invocation.Invocation, rc invocation.RunContext, started bool, err error) {
	begun, err := s.BeginMany(ctx, db, []invocation.BeginArgs{{ID: id, Attempt: attempt}})
	if err != nil {
		return inv, rc, false, err
	}
	b := begun[0]
	return b.Value.Invocation, b.Value.Run, b.Value.Started, b.Err
}

// Complete records an executing invocation's successful call.
func (s *Store) Complete(ctx context.Context, db DB, id uuid.UUID, o *invocation.Outcome) error {
	done, err := s.CompleteMany(ctx, db, []invocation.Completion{{ID: id, Outcome: o}})
	if err != nil {
		return err
	}
	return done[0].Err
}
