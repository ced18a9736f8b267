package invocation

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/outboxd/outboxd/executors"
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
	// Origin is "invoke", "envelope" or "mcp".
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
	// TraceContext is the W3C traceparent of the request that created
	// the invocation, when it was traced; empty otherwise.
	TraceContext string
	// ApprovalTraceContext is the approver's traceparent, when traced.
	ApprovalTraceContext string
	// GrantID is the grant (internal/domain/grant) that let the invocation
	// through without a human, when one did (ModeSource "grant").
	GrantID *uuid.UUID

	// IntentDigest is the digest of the sealed intent of an invocation
	// that waited for a human (package intent), Intent its components;
	// ApprovedDigest is the digest the approval approved. IntentChanges
	// are what the last check before a call found changed since the
	// approval (the invocation went back to pending). Empty when none.
	IntentDigest   string
	Intent         json.RawMessage
	ApprovedDigest string
	IntentChanges  []string
	// ParamsOriginal are the params (redacted) the caller sent, when an
	// approver edited them; Edits are the edits ([]intent.Edit in JSON).
	ParamsOriginal json.RawMessage
	Edits          json.RawMessage

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
