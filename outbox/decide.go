package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/outboxd/outboxd/internal/dbsqlc"
	"github.com/outboxd/outboxd/internal/dbutil"
	"github.com/outboxd/outboxd/policy"
	"github.com/outboxd/outboxd/worker"
)

// ApproveParams is a human's approval.
type ApproveParams struct {
	OrganizationID string
	InvocationID   string
	UserID         string
	// Always also writes an allow override for the action: at the
	// invocation's automation scope when it has one, else for the org.
	Always bool
}

// Approve clears a pending invocation to run. Releasing its parked job
// happens in the same transaction: the approval is the un-blocking.
func (s *Service) Approve(ctx context.Context, p *ApproveParams) (dbsqlc.ActionInvocation, error) {
	return s.decide(ctx, p.OrganizationID, p.InvocationID, "approved", func(ctx context.Context, tx pgx.Tx, inv dbsqlc.ActionInvocation) (dbsqlc.ActionInvocation, error) {
		approved, err := s.queries.InvocationApprove(ctx, tx, dbsqlc.InvocationApproveParams{ID: inv.ID, ApprovedBy: &p.UserID})
		if err != nil {
			return inv, fmt.Errorf("approving: %w", err)
		}
		if inv.JobID != nil {
			if _, err := s.deps.River.JobRetryTx(ctx, tx, *inv.JobID); err != nil {
				return inv, fmt.Errorf("releasing job: %w", err)
			}
		}
		if p.Always {
			scope, scopeID := "org", inv.OrganizationID
			if inv.AutomationID != nil {
				scope, scopeID = "automation", *inv.AutomationID
			}
			err := s.queries.ModeUpsert(ctx, tx, dbsqlc.ModeUpsertParams{
				OrganizationID: inv.OrganizationID, Scope: scope, ScopeID: scopeID,
				SourceID: inv.Integration, ActionID: inv.Action, Mode: string(policy.ModeAllow), UpdatedBy: p.UserID,
			})
			if err != nil {
				return inv, fmt.Errorf("writing allow override: %w", err)
			}
		}
		return approved, nil
	})
}

// DenyParams is a human's denial.
type DenyParams struct {
	OrganizationID string
	InvocationID   string
	UserID         string
	Reason         string
}

// Deny rejects a pending invocation and cancels its parked job. The reason
// is stored as the invocation's error, redacted like every error string.
func (s *Service) Deny(ctx context.Context, p *DenyParams) (dbsqlc.ActionInvocation, error) {
	return s.decide(ctx, p.OrganizationID, p.InvocationID, "denied", func(ctx context.Context, tx pgx.Tx, inv dbsqlc.ActionInvocation) (dbsqlc.ActionInvocation, error) {
		denied, err := s.queries.InvocationDeny(ctx, tx, dbsqlc.InvocationDenyParams{
			ID: inv.ID, DeniedReason: ptr("human"), Error: nilIfEmpty(policy.RedactString(p.Reason)), ApprovedBy: &p.UserID,
		})
		if err != nil {
			return inv, fmt.Errorf("denying: %w", err)
		}
		if err := s.cancelJob(ctx, tx, inv); err != nil {
			return inv, err
		}
		return denied, nil
	})
}

// decide runs a human decision on a locked, pending, unexpired invocation.
// An invocation found past its expiry is expired (and that is committed)
// before ErrExpired is returned.
func (s *Service) decide(ctx context.Context, org, id, decision string, fn func(context.Context, pgx.Tx, dbsqlc.ActionInvocation) (dbsqlc.ActionInvocation, error)) (dbsqlc.ActionInvocation, error) {
	uid, err := uuid.Parse(id)
	if err != nil {
		return dbsqlc.ActionInvocation{}, fmt.Errorf("%w: invocation %s", ErrNotFound, id)
	}
	var expired bool
	inv, err := dbutil.WithTxV(ctx, s.deps.Pool, func(ctx context.Context, tx pgx.Tx) (dbsqlc.ActionInvocation, error) {
		inv, err := s.queries.InvocationGetForUpdate(ctx, tx, dbsqlc.InvocationGetForUpdateParams{ID: uid, OrganizationID: org})
		if errors.Is(err, pgx.ErrNoRows) {
			return inv, fmt.Errorf("%w: invocation %s", ErrNotFound, id)
		}
		if err != nil {
			return inv, fmt.Errorf("loading invocation: %w", err)
		}
		if inv.Status != worker.StatusPending {
			return inv, fmt.Errorf("%w: invocation is %s, not pending", ErrConflict, inv.Status)
		}
		if inv.ExpiresAt != nil && !time.Now().Before(*inv.ExpiresAt) {
			expired = true
			return worker.ExpireTx(ctx, tx, s.deps.River, s.deps.Metrics, inv)
		}
		return fn(ctx, tx, inv)
	})
	if err != nil {
		return inv, err
	}
	if expired {
		return inv, fmt.Errorf("%w: the approval window closed at %s", ErrExpired, inv.ExpiresAt.UTC().Format(time.RFC3339))
	}
	s.deps.Metrics.InvocationStatus(inv.Mode, inv.Status)
	s.deps.Metrics.ApprovalLatency.WithLabelValues(decision).Observe(time.Since(inv.CreatedAt).Seconds())
	s.logger.Info("invocation "+decision, "invocation_id", inv.ID, "organization_id", inv.OrganizationID,
		"source_id", inv.Integration, "action_id", inv.Action, "status", inv.Status, "user_id", deref(inv.ApprovedBy))
	return inv, nil
}

// Cancel undoes an invocation that has not started: pending or approved but
// not yet executing. Anything else is ErrConflict.
func (s *Service) Cancel(ctx context.Context, org, id string) (dbsqlc.ActionInvocation, error) {
	uid, err := uuid.Parse(id)
	if err != nil {
		return dbsqlc.ActionInvocation{}, fmt.Errorf("%w: invocation %s", ErrNotFound, id)
	}
	inv, err := dbutil.WithTxV(ctx, s.deps.Pool, func(ctx context.Context, tx pgx.Tx) (dbsqlc.ActionInvocation, error) {
		inv, err := s.queries.InvocationGetForUpdate(ctx, tx, dbsqlc.InvocationGetForUpdateParams{ID: uid, OrganizationID: org})
		if errors.Is(err, pgx.ErrNoRows) {
			return inv, fmt.Errorf("%w: invocation %s", ErrNotFound, id)
		}
		if err != nil {
			return inv, fmt.Errorf("loading invocation: %w", err)
		}
		if inv.Status != worker.StatusPending && inv.Status != worker.StatusApproved {
			return inv, fmt.Errorf("%w: invocation is %s and can no longer be cancelled", ErrConflict, inv.Status)
		}
		cancelled, err := s.queries.InvocationCancel(ctx, tx, inv.ID)
		if err != nil {
			return inv, fmt.Errorf("cancelling: %w", err)
		}
		if err := s.cancelJob(ctx, tx, inv); err != nil {
			return inv, err
		}
		_, err = tx.Exec(ctx, `SELECT pg_notify($1, $2)`, worker.NotifyChannel, inv.ID.String())
		return cancelled, err
	})
	if err != nil {
		return inv, err
	}
	s.deps.Metrics.InvocationStatus(inv.Mode, inv.Status)
	return inv, nil
}

func (s *Service) cancelJob(ctx context.Context, tx pgx.Tx, inv dbsqlc.ActionInvocation) error {
	if inv.JobID == nil {
		return nil
	}
	if _, err := s.deps.River.JobCancelTx(ctx, tx, *inv.JobID); err != nil && !errors.Is(err, river.ErrNotFound) {
		return fmt.Errorf("cancelling job: %w", err)
	}
	return nil
}
