package revocation

import (
	"context"
	"fmt"

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
// An invocation records its token's session_id, automation_id, user_id,
// subject (requested_by), jti and iat: the ones matched are those whose
// session, automation or person is the revocation's (a subject's:
// requested_by or user_id), or whose token's jti is, and whose token was
// issued before the revocation's cut-off; with issued_before, every one of
// the organization's whose token was. One whose token had no iat, or
// recorded before invocations kept it (migration 048), is matched by its
// creation time instead: created before the cut-off.
//
// The revocation's transaction first takes the organization's revocation
// lock, and waits for the transactions recording invocations of the
// organization under way (they hold it shared), so that it finds their
// invocations. One recorded after the revocation committed, by a revoked
// token that another API process still accepted (within
// auth.revocation_refresh) or whose request was past its check, is
// withdrawn by the transaction that records it, which sees the revocation
// (Refusals; invocationstore.Store.Record): it is recorded cancelled, its
// event naming the revocation, never runs, and its request is answered as
// a revoked token is (invocation.RevokedError).
// Such an invocation is not counted in Revocation.Withdrawn.
func (s *Service) SetInvocations(inv Invocations) {
	s.invocations = inv
}

// People removes, in a revocation's transaction, what lets a person act
// without a token of theirs: the Slack approvers mapped to them
// (slackapproval.Service.Offboard), whose clicks no token check sees,
// and the grants they made (grant.Offboarding), their approvals given
// ahead.
type People interface {
	Offboard(ctx context.Context, tx pgx.Tx, org, subject, by string) error
}

// SetPeople makes every revocation by subject stored from now on remove,
// in its own transaction, what lets that person act without a token (see
// People): offboarding someone ends their approvals from Slack and their
// grants as it ends their tokens. Someone admitted again is mapped again,
// and grants again, by hand. Call it before the Service is used.
func (s *Service) SetPeople(ps ...People) {
	s.people = ps
}

// inTx is what the transaction that stores r does besides (see
// revocationstore.Store.Insert): withdraw what r's revoked tokens asked
// for and, by subject, offboard the person.
func (s *Service) inTx(ctx context.Context, tx pgx.Tx, r *Revocation) error {
	if err := s.withdraw(ctx, tx, r); err != nil {
		return err
	}
	if r.Subject == "" {
		return nil
	}
	for _, p := range s.people {
		if err := p.Offboard(ctx, tx, r.Org, r.Subject, r.RevokedBy); err != nil {
			return fmt.Errorf("removing what %s may do without a token: %w", r.Subject, err)
		}
	}
	return nil
}

// withdraw withdraws what r's revoked tokens asked for, in the transaction
// that stores r.
func (s *Service) withdraw(ctx context.Context, tx pgx.Tx, r *Revocation) error {
	if s.invocations == nil {
		return nil
	}
	ids, err := s.store.Requested(ctx, tx, r)
	if err != nil {
		return fmt.Errorf("finding the invocations the revoked tokens asked for: %w", err)
	}
	reason := WithdrawalReason(r)
	for _, id := range ids {
		if _, err := s.invocations.Withdraw(ctx, tx, id, r.RevokedBy, reason); err != nil {
			return fmt.Errorf("withdrawing invocation %s: %w", id, err)
		}
		r.Withdrawn++
	}
	return nil
}
