package invocationstore

import (
	"encoding/json"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/platform/dbsqlc"
)

// row is any sqlc row with the columns of action_invocations.
type row interface {
	dbsqlc.ActionInvocation | dbsqlc.InvocationInsertManyRow | dbsqlc.InvocationApproveRow |
		dbsqlc.InvocationDenyRow | dbsqlc.InvocationExpireRow | dbsqlc.InvocationCancelRow |
		dbsqlc.InvocationStartRow | dbsqlc.InvocationFailRow |
		dbsqlc.InvocationSkipRow | dbsqlc.InvocationScheduleRetryRow | dbsqlc.InvocationSnoozeRow |
		dbsqlc.InvocationReplayRow | dbsqlc.InvocationDiscardRow |
		dbsqlc.InvocationEditRow | dbsqlc.InvocationIntentChangedRow
}

func fromRow[R row](r R) invocation.Invocation {
	a := dbsqlc.ActionInvocation(r)
	inv := invocation.Invocation{
		ID: a.ID, OrganizationID: a.OrganizationID, SessionID: a.SessionID, AutomationID: a.AutomationID,
		UserID: a.UserID, RequestedBy: a.RequestedBy, Origin: a.Origin, Integration: a.Integration,
		Action: a.Action, RiskLevel: a.RiskLevel, Mode: a.Mode, ModeSource: a.ModeSource,
		Params: a.Params, ParamsSealed: a.ParamsSealed, ParamsHash: a.ParamsHash, Status: invocation.Status(a.Status),
		Result: a.Result, Error: a.Error, DeniedReason: a.DeniedReason, DurationMs: a.DurationMs,
		ApprovedBy: a.ApprovedBy, ApprovedAt: a.ApprovedAt, StartedAt: a.StartedAt, CompletedAt: a.CompletedAt,
		ExpiresAt: a.ExpiresAt, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt,
		ExternalID: a.ExternalID, IdempotencyKey: a.IdempotencyKey, JobID: a.JobID, Attempt: a.Attempt,
		ProviderWaits: a.ProviderWaits, RateBucket: a.RateBucket, MustRunBefore: a.MustRunBefore,
		ProviderRef: a.ProviderRef, Conflict: a.Conflict, Approval: a.Approval, RiskHint: a.RiskHint,
		DeadLetteredAt: a.DeadLetteredAt, ReplayCount: a.ReplayCount, ReplayedBy: a.ReplayedBy,
		ReplayedAt: a.ReplayedAt, DiscardedBy: a.DiscardedBy, DiscardedAt: a.DiscardedAt,
		TraceContext: deref(a.TraceContext), ApprovalTraceContext: deref(a.ApprovalTrace),
		GrantID:      a.GrantID,
		IntentDigest: deref(a.IntentDigest), Intent: a.Intent, ApprovedDigest: deref(a.ApprovedDigest),
		IntentChanges: a.IntentChanges, ParamsOriginal: a.ParamsOriginal, Edits: a.Edits,
	}
	if len(a.Retry) > 0 {
		var r invocation.Retry
		if json.Unmarshal(a.Retry, &r) == nil {
			inv.Retry = &r
		}
	}
	if len(a.Steps) > 0 {
		var st executors.Steps
		if json.Unmarshal(a.Steps, &st) == nil {
			inv.Steps = &st
		}
	}
	return inv
}

func fromRows(rows []dbsqlc.ActionInvocation) []invocation.Invocation {
	out := make([]invocation.Invocation, len(rows))
	for i, r := range rows {
		out[i] = fromRow(r)
	}
	return out
}

func fromEvent(e dbsqlc.InvocationEvent) invocation.Event {
	return invocation.Event{
		ID: e.ID, InvocationID: e.InvocationID, Seq: e.Seq, Type: invocation.EventType(e.Type),
		From: invocation.Status(deref(e.FromStatus)), To: invocation.Status(e.ToStatus),
		Actor: deref(e.Actor), Reason: deref(e.Reason), CreatedAt: e.CreatedAt,
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
