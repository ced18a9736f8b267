package invocation

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/platform/dbsqlc"
)

// Invocation is one requested action and where it stands.
type Invocation struct {
	ID             uuid.UUID
	OrganizationID string
	SessionID      *string
	AutomationID   *string
	// UserID is the human the caller acts for, if any.
	UserID      *string
	RequestedBy string
	// Origin is "invoke" or "envelope".
	Origin      string
	Integration string
	Action      string
	// RiskLevel is the action's risk tier when the invocation was created
	// (R0–R4; rows written before tiers hold read, write or danger, which
	// policy.TierOf reads as R1, R2 and R3).
	RiskLevel  string
	Mode       string
	ModeSource string
	// Params are the params as stored and shown: redacted.
	Params json.RawMessage
	// ParamsSealed holds the exact params, sealed, when redaction changed
	// them; nil once the invocation is finished.
	ParamsSealed []byte
	ParamsHash   string
	Status       Status
	Result       json.RawMessage
	Error        *string
	DeniedReason *string
	DurationMs   *int32
	ApprovedBy   *string
	ApprovedAt   *time.Time
	StartedAt    *time.Time
	CompletedAt  *time.Time
	ExpiresAt    *time.Time
	CreatedAt    time.Time
	UpdatedAt    time.Time

	ExternalID     *string
	IdempotencyKey *string
	JobID          *int64
	Attempt        int32
	ProviderWaits  int32
	RateBucket     *string
	MustRunBefore  *time.Time
	ProviderRef    *string
	Conflict       bool
	// Approval is the envelope's ask: "auto" or "required".
	Approval string
	RiskHint *string
	// Retry is the invocation's retry policy; nil uses the worker's.
	Retry *Retry
	// Steps is the source's record of its verification, repair and
	// rollback of the call (plugins); nil for the other sources.
	Steps *executors.Steps

	DeadLetteredAt *time.Time
	ReplayCount    int32
	ReplayedBy     *string
	ReplayedAt     *time.Time
	DiscardedBy    *string
	DiscardedAt    *time.Time
}

// Event is one transition in an invocation's timeline.
type Event struct {
	// ID grows with every event of every invocation.
	ID           int64
	InvocationID uuid.UUID
	Seq          int32
	Type         EventType
	From         Status // "" for the created event
	To           Status
	Actor        string
	Reason       string
	CreatedAt    time.Time
}

// row is any sqlc row with the columns of action_invocations.
type row interface {
	dbsqlc.ActionInvocation | dbsqlc.InvocationInsertManyRow | dbsqlc.InvocationApproveRow |
		dbsqlc.InvocationDenyRow | dbsqlc.InvocationExpireRow | dbsqlc.InvocationCancelRow |
		dbsqlc.InvocationStartRow | dbsqlc.InvocationFailRow |
		dbsqlc.InvocationSkipRow | dbsqlc.InvocationScheduleRetryRow | dbsqlc.InvocationSnoozeRow |
		dbsqlc.InvocationReplayRow | dbsqlc.InvocationDiscardRow
}

func fromRow[R row](r R) Invocation {
	a := dbsqlc.ActionInvocation(r)
	inv := Invocation{
		ID: a.ID, OrganizationID: a.OrganizationID, SessionID: a.SessionID, AutomationID: a.AutomationID,
		UserID: a.UserID, RequestedBy: a.RequestedBy, Origin: a.Origin, Integration: a.Integration,
		Action: a.Action, RiskLevel: a.RiskLevel, Mode: a.Mode, ModeSource: a.ModeSource,
		Params: a.Params, ParamsSealed: a.ParamsSealed, ParamsHash: a.ParamsHash, Status: Status(a.Status),
		Result: a.Result, Error: a.Error, DeniedReason: a.DeniedReason, DurationMs: a.DurationMs,
		ApprovedBy: a.ApprovedBy, ApprovedAt: a.ApprovedAt, StartedAt: a.StartedAt, CompletedAt: a.CompletedAt,
		ExpiresAt: a.ExpiresAt, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt,
		ExternalID: a.ExternalID, IdempotencyKey: a.IdempotencyKey, JobID: a.JobID, Attempt: a.Attempt,
		ProviderWaits: a.ProviderWaits, RateBucket: a.RateBucket, MustRunBefore: a.MustRunBefore,
		ProviderRef: a.ProviderRef, Conflict: a.Conflict, Approval: a.Approval, RiskHint: a.RiskHint,
		DeadLetteredAt: a.DeadLetteredAt, ReplayCount: a.ReplayCount, ReplayedBy: a.ReplayedBy,
		ReplayedAt: a.ReplayedAt, DiscardedBy: a.DiscardedBy, DiscardedAt: a.DiscardedAt,
	}
	if len(a.Retry) > 0 {
		var r Retry
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

func fromRows(rows []dbsqlc.ActionInvocation) []Invocation {
	out := make([]Invocation, len(rows))
	for i, r := range rows {
		out[i] = fromRow(r)
	}
	return out
}

func fromEvent(e dbsqlc.InvocationEvent) Event {
	return Event{
		ID: e.ID, InvocationID: e.InvocationID, Seq: e.Seq, Type: EventType(e.Type),
		From: Status(deref(e.FromStatus)), To: Status(e.ToStatus),
		Actor: deref(e.Actor), Reason: deref(e.Reason), CreatedAt: e.CreatedAt,
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
