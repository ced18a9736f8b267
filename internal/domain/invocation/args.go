package invocation

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/domain/auth"
)

// The channel events are announced on, and the arguments and answers of
// the invocation store's methods (package invocationstore).

// EventsChannel is the Postgres channel events are announced on, as JSON
// {"id", "invocation_id", "organization_id", "type", "to_status"}: the
// events that make a notice (see Notice), a creation that waits for
// approval, approved, denied, expired, cancelled, completed, failed and
// skipped. The others (started, retries, snoozes, replays, discards) are
// in the table only.
const EventsChannel = "outboxd_invocation_events"

var (
	// ErrEventNotFound: no such event (in this organization).
	ErrEventNotFound = errors.New("event not found")
)

// RunContext is what the worker checks before a call, read with the
// invocation in one round trip.
type RunContext struct {
	// DoNotContact are the organization's recipient patterns.
	DoNotContact []string
	// QuietHours are the windows of the organization and of the
	// invocation's bucket (an envelope's: every window), as JSON
	// [{"bucket","time_zone","start","end"}].
	QuietHours json.RawMessage
	// CredentialVersion changes whenever a credential the invocation may
	// use is stored; the zero time when there is none.
	CredentialVersion time.Time
	// StartedBefore is true when an earlier execution had already started
	// (started_at was set before this one): the provider may have acted on
	// the invocation even though no outcome was recorded.
	StartedBefore bool
	// PausedAt is when the organization's pause began; nil when it is not
	// paused. A paused organization's invocations do not start.
	PausedAt *time.Time
}

// BeginArgs names one job's Begin.
type BeginArgs struct {
	ID      uuid.UUID
	Attempt int
}

// Begun is the answer of BeginMany for one invocation.
type Begun struct {
	Invocation Invocation
	Run        RunContext
	Started    bool
}

// Page is a limit/offset window. Limit defaults to 50 and is capped at
// 100; a negative offset counts as 0.
type Page struct {
	Limit, Offset int
}

// ListFilter narrows an organization's invocation listing; zero fields
// do not filter.
type ListFilter struct {
	Status      Status
	Integration string
	// Origin is "invoke", "envelope" or "mcp".
	Origin       string
	SessionID    string
	AutomationID string
	// CreatedAfter and CreatedBefore bound created_at: [after, before).
	CreatedAfter, CreatedBefore *time.Time
	// Sources is the reader's sources claim: absent, any source; present,
	// only the invocations of the sources it lists (none when empty), as
	// the reader's event streams show them.
	Sources auth.SourceClaim
}

// CreateParams is a new invocation. Status is pending (its job is parked
// until a human decides, and an expiry job is scheduled at ExpiresAt),
// approved (its job is available now) or denied (no job).
type CreateParams struct {
	ID                                     uuid.UUID
	OrganizationID                         string
	SessionID, AutomationID, UserID        string
	RequestedBy, Origin                    string
	Integration, Action, RiskLevel         string
	Mode, ModeSource                       string
	Params                                 json.RawMessage
	ParamsSealed                           []byte
	ParamsHash                             string
	Status                                 Status
	DeniedReason                           string
	ExpiresAt                              *time.Time
	ExternalID, IdempotencyKey, RateBucket string
	MustRunBefore                          *time.Time
	Approval, RiskHint                     string
	Retry                                  *Retry
	// TraceContext is the W3C traceparent of the creating request's span,
	// or empty: stored with the invocation and given to its job, whose
	// spans then join that trace.
	TraceContext string
	// Behind queues its job behind every job not Behind, whenever and
	// wherever it waits to be fetched (River's priority 2 rather than 1):
	// the invocations of an organization asking faster than its fair
	// rate (package outbox), so that a flood from one does not hold back
	// another's.
	Behind bool
	// GrantID is the grant that lets the invocation through without a
	// human (ModeSource "grant"); nil for every other.
	GrantID *uuid.UUID
	// IntentDigest and Intent are the sealed intent of an invocation
	// created pending (package intent); empty otherwise.
	IntentDigest string
	Intent       json.RawMessage
	// Token is the bearer token that asked for the invocation; nil when
	// none did. Its jti and iat are recorded with the invocation, and the
	// revocations that refuse it are looked for in the transaction that
	// records it (invocationstore.Store.CreateMany).
	Token *Token
}

// Token is the bearer token that asked for an invocation, as a revocation
// matches it (package revocation): its claims, "" where it has none, and
// its iat, nil without one.
type Token struct {
	JTI, SessionID, AutomationID, Subject, UserID string
	IssuedAt                                      *time.Time
}

// TokenOf is the token of verified claims c; nil for nil.
func TokenOf(c *auth.Claims) *Token {
	if c == nil {
		return nil
	}
	t := &Token{JTI: c.ID, SessionID: c.SessionID, AutomationID: c.AutomationID, Subject: c.Subject, UserID: c.UserID}
	if c.IssuedAt != nil {
		iat := c.IssuedAt.Time
		t.IssuedAt = &iat
	}
	return t
}

// Outcome is a successful provider call.
type Outcome struct {
	Result      json.RawMessage
	ProviderRef string
	Conflict    bool
	DurationMs  *int32
	// Steps is the source's verification record, nil when it has none.
	Steps *executors.Steps
}

// Completion is one invocation's successful call.
type Completion struct {
	ID      uuid.UUID
	Outcome *Outcome
}
