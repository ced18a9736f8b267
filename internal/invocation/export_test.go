package invocation

import (
	"context"

	"github.com/google/uuid"
)

// The one-invocation forms of BeginMany and CompleteMany, for tests.

// Begin is a job's first step before its call, in one statement: it returns
// the invocation with its RunContext and, when it is approved or executing
// and none of the gates can apply (no do-not-contact pattern, no quiet
// window, must_run_before not passed), marks it executing for attempt, as
// Start does. started is false when it did not: the invocation is in
// another state, or the gates must be checked before Start.
func (s *Store) Begin(ctx context.Context, db DB, id uuid.UUID, attempt int) (inv Invocation, rc RunContext, started bool, err error) {
	begun, err := s.BeginMany(ctx, db, []BeginArgs{{ID: id, Attempt: attempt}})
	if err != nil {
		return inv, rc, false, err
	}
	b := begun[0]
	return b.Value.Invocation, b.Value.Run, b.Value.Started, b.Err
}

// Complete records an executing invocation's successful call.
func (s *Store) Complete(ctx context.Context, db DB, id uuid.UUID, o *Outcome) (Invocation, error) {
	done, err := s.CompleteMany(ctx, db, []Completion{{ID: id, Outcome: o}})
	if err != nil {
		return Invocation{}, err
	}
	return done[0].Value, done[0].Err
}
