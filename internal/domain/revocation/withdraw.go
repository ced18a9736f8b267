package revocation

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outboxd/outboxd/internal/domain/invocation"
)

// Invocations cancels an invocation that has not started, with its job, in
// a revocation's transaction, recording actor and reason on its cancelled
// event (invocationstore.Store with the River client, Withdraw).
type Invocations interface {
	Withdraw(ctx context.Context, tx pgx.Tx, id uuid.UUID, actor, reason string) (invocation.Invocation, error)
}

// SetInvocations makes every revocation stored from now on withdraw, in
// its own transaction, the invocations the tokens it refuses asked for
// that have not started: pending (a human could still approve one) or
// approved and never started. Each is cancelled, its job descheduled, its
// cancelled event naming the revocation, with the revoker as actor;
// Revocation.Withdrawn counts them. Invocations that are executing or have
// ended are left as they are. Call it before the Service is used.
//
// An invocation records its token's session_id, automation_id, user_id
// and subject (requested_by) but not its iat or jti: the ones matched are
// those created before the revocation's cut-off (so asked for by a token
// issued before it) whose session, automation or person is the
// revocation's (a subject's: requested_by or user_id); with issued_before,
// every one of the organization's created before it. A revocation by jti
// withdraws none. One created after the revocation was stored, by a
// revoked token another API process still accepted (within
// auth.revocation_refresh), is not withdrawn either.
func (s *Service) SetInvocations(inv Invocations) {
	s.invocations = inv
}

// withdraw withdraws what r's revoked tokens asked for, in the transaction
// that stores r (revocationstore.Store.Insert).
func (s *Service) withdraw(ctx context.Context, tx pgx.Tx, r *Revocation) error {
	if s.invocations == nil {
		return nil
	}
	ids, err := s.store.Requested(ctx, tx, r)
	if err != nil {
		return fmt.Errorf("finding the invocations the revoked tokens asked for: %w", err)
	}
	reason := withdrawalReason(r)
	for _, id := range ids {
		if _, err := s.invocations.Withdraw(ctx, tx, id, r.RevokedBy, reason); err != nil {
			return fmt.Errorf("withdrawing invocation %s: %w", id, err)
		}
		r.Withdrawn++
	}
	return nil
}

// withdrawalReason is a withdrawn invocation's cancelled event's reason:
// the revocation and what it revoked.
func withdrawalReason(r *Revocation) string {
	what := "every token issued before " + r.IssuedBefore.UTC().Format(time.RFC3339)
	switch {
	case r.SessionID != "":
		what = fmt.Sprintf("session_id %q", r.SessionID)
	case r.AutomationID != "":
		what = fmt.Sprintf("automation_id %q", r.AutomationID)
	case r.Subject != "":
		what = fmt.Sprintf("subject %q", r.Subject)
	}
	return fmt.Sprintf("withdrawn: the tokens that asked for it were revoked (revocation %d, %s)", r.ID, what)
}
