package api

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/outboxd/outboxd/internal/domain/intent"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/outbox"
	"github.com/outboxd/outboxd/policy"
)

// invocationView is the API shape of an invocation.
type invocationView struct {
	ID             uuid.UUID         `json:"id"`
	OrganizationID string            `json:"organization_id"`
	SessionID      *string           `json:"session_id"`
	AutomationID   *string           `json:"automation_id"`
	UserID         *string           `json:"user_id"`
	RequestedBy    string            `json:"requested_by"`
	Origin         string            `json:"origin"`
	Integration    string            `json:"integration"`
	Action         string            `json:"action"`
	RiskTier       policy.Tier       `json:"risk_tier"`
	RiskLevel      string            `json:"risk_level"`
	Mode           string            `json:"mode"`
	ModeSource     string            `json:"mode_source"`
	Params         json.RawMessage   `json:"params"`
	Status         invocation.Status `json:"status"`
	Result         json.RawMessage   `json:"result"`
	Error          *string           `json:"error"`
	DeniedReason   *string           `json:"denied_reason"`
	DurationMs     *int32            `json:"duration_ms"`
	ApprovedBy     *string           `json:"approved_by"`
	ApprovedAt     *time.Time        `json:"approved_at"`
	StartedAt      *time.Time        `json:"started_at"`
	CompletedAt    *time.Time        `json:"completed_at"`
	ExpiresAt      *time.Time        `json:"expires_at"`
	CreatedAt      time.Time         `json:"created_at"`
	UpdatedAt      time.Time         `json:"updated_at"`
	ExternalID     *string           `json:"external_id"`
	IdempotencyKey *string           `json:"idempotency_key"`
	Attempt        int32             `json:"attempt"`
	ProviderWaits  int32             `json:"provider_waits"`
	RateBucket     *string           `json:"rate_bucket"`
	MustRunBefore  *time.Time        `json:"must_run_before"`
	ProviderRef    *string           `json:"provider_ref"`
	Conflict       bool              `json:"conflict"`
	DeadLetteredAt *time.Time        `json:"dead_lettered_at"`
	ReplayCount    int32             `json:"replay_count"`
	ReplayedBy     *string           `json:"replayed_by"`
	ReplayedAt     *time.Time        `json:"replayed_at"`
	DiscardedBy    *string           `json:"discarded_by"`
	DiscardedAt    *time.Time        `json:"discarded_at"`
	// GrantID is the grant that let the invocation through without a
	// human (mode_source "grant"); null otherwise.
	GrantID *uuid.UUID `json:"grant_id"`
	// Set on pending invocations when approver groups are served (see
	// addApprovals).
	approvalsView
	// Preview is what a pending invocation will do, once rendered
	// (internal/domain/preview); shown by GET /v1/invocations/{id} only.
	Preview *previewView `json:"preview,omitempty"`
	// Edited says an approver changed the params before approving: Params
	// are the edited ones, ParamsOriginal what the caller sent, Edits who
	// changed what (intent.Edit).
	Edited         bool            `json:"edited"`
	ParamsOriginal json.RawMessage `json:"params_original,omitempty"`
	Edits          json.RawMessage `json:"edits,omitempty"`
	// Intent is the sealed intent of an invocation that waited for a
	// human; absent for the others.
	Intent *intentView `json:"intent,omitempty"`
}

// intentView is the API shape of an invocation's sealed intent.
type intentView struct {
	Digest string `json:"digest"`
	// Short is the digest's first characters, as cards and timelines show.
	Short          string   `json:"short"`
	ApprovedDigest *string  `json:"approved_digest"`
	Changes        []string `json:"changes,omitempty"`
}

func viewIntent(inv *invocation.Invocation) *intentView {
	if inv.IntentDigest == "" {
		return nil
	}
	return &intentView{Digest: inv.IntentDigest, Short: intent.Prefix(inv.IntentDigest),
		ApprovedDigest: nilIfEmpty(inv.ApprovedDigest), Changes: inv.IntentChanges}
}

func viewInvocation(inv invocation.Invocation) invocationView {
	tier := policy.TierOf(inv.RiskLevel)
	return invocationView{
		ID: inv.ID, OrganizationID: inv.OrganizationID, SessionID: inv.SessionID, AutomationID: inv.AutomationID, UserID: inv.UserID,
		RequestedBy: inv.RequestedBy, Origin: inv.Origin, Integration: inv.Integration, Action: inv.Action,
		RiskTier: tier, RiskLevel: tier.Risk(), Mode: inv.Mode, ModeSource: inv.ModeSource, Params: inv.Params, Status: inv.Status,
		Result: inv.Result, Error: inv.Error, DeniedReason: inv.DeniedReason, DurationMs: inv.DurationMs,
		ApprovedBy: inv.ApprovedBy, ApprovedAt: inv.ApprovedAt, StartedAt: inv.StartedAt, CompletedAt: inv.CompletedAt,
		ExpiresAt: inv.ExpiresAt, CreatedAt: inv.CreatedAt, UpdatedAt: inv.UpdatedAt, ExternalID: inv.ExternalID,
		IdempotencyKey: inv.IdempotencyKey, Attempt: inv.Attempt, ProviderWaits: inv.ProviderWaits, RateBucket: inv.RateBucket,
		MustRunBefore: inv.MustRunBefore, ProviderRef: inv.ProviderRef, Conflict: inv.Conflict,
		DeadLetteredAt: inv.DeadLetteredAt, ReplayCount: inv.ReplayCount, ReplayedBy: inv.ReplayedBy,
		ReplayedAt: inv.ReplayedAt, DiscardedBy: inv.DiscardedBy, DiscardedAt: inv.DiscardedAt,
		GrantID: inv.GrantID,
		Edited:  len(inv.ParamsOriginal) > 0, ParamsOriginal: inv.ParamsOriginal, Edits: inv.Edits, Intent: viewIntent(&inv),
	}
}

// viewEach returns the view of each item; nil stays nil, which JSON shows
// as null.
func viewEach[T, V any](items []T, view func(T) V) []V {
	if items == nil {
		return nil
	}
	out := make([]V, len(items))
	for i, item := range items {
		out[i] = view(item)
	}
	return out
}

// viewEachValue returns the view of each value of a map; nil stays nil,
// which JSON shows as null, and an empty map stays empty ({}).
func viewEachValue[K comparable, T, V any](items map[K]T, view func(T) V) map[K]V {
	if items == nil {
		return nil
	}
	out := make(map[K]V, len(items))
	for k, item := range items {
		out[k] = view(item)
	}
	return out
}

func viewInvocations(invs []invocation.Invocation) []invocationView {
	views := make([]invocationView, len(invs))
	for i, inv := range invs {
		views[i] = viewInvocation(inv)
	}
	return views
}

// eventView is the API shape of one timeline event.
type eventView struct {
	ID        int64     `json:"id"`
	Seq       int32     `json:"seq"`
	Type      string    `json:"type"`
	From      *string   `json:"from_status"`
	To        string    `json:"to_status"`
	Actor     *string   `json:"actor"`
	Reason    *string   `json:"reason"`
	CreatedAt time.Time `json:"created_at"`
}

func viewEvents(events []invocation.Event) []eventView {
	out := make([]eventView, len(events))
	for i, e := range events {
		out[i] = eventView{ID: e.ID, Seq: e.Seq, Type: string(e.Type), From: nilIfEmpty(string(e.From)), To: string(e.To),
			Actor: nilIfEmpty(e.Actor), Reason: nilIfEmpty(e.Reason), CreatedAt: e.CreatedAt}
	}
	return out
}

func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// envelopeView is the Universal Action Envelope shape of an invocation.
type envelopeView struct {
	ActionID     uuid.UUID        `json:"action_id"`
	ExternalID   string           `json:"external_id"`
	TenantID     string           `json:"tenant_id"`
	AutomationID *string          `json:"automation_id"`
	Type         string           `json:"type"`
	Tool         envelopeToolView `json:"tool"`
	Args         json.RawMessage  `json:"args"`
	// Edited says an approver changed the args before approving, as an
	// invocation's view says it of its params.
	Edited         bool                `json:"edited"`
	ArgsOriginal   json.RawMessage     `json:"args_original,omitempty"`
	Edits          json.RawMessage     `json:"edits,omitempty"`
	Risk           *string             `json:"risk"`
	Approval       string              `json:"approval"`
	Constraints    envelopeConstraints `json:"constraints"`
	Result         envelopeResult      `json:"result"`
	Mode           string              `json:"mode"`
	ModeSource     string              `json:"mode_source"`
	Status         invocation.Status   `json:"invocation_status"`
	ExpiresAt      *time.Time          `json:"expires_at"`
	Timestamps     envelopeTimestamps  `json:"timestamps"`
	InvocationPath string              `json:"invocation_url"`
	// ResultEnvelope is the Action API contract's result; nil while the
	// invocation is cleared to run or running.
	ResultEnvelope *resultEnvelopeView `json:"result_envelope"`
}

type envelopeToolView struct {
	Name   string `json:"name"`
	Source string `json:"source"`
	Action string `json:"action"`
}

type envelopeConstraints struct {
	RateBucket    *string    `json:"rate_bucket"`
	MustRunBefore *time.Time `json:"must_run_before"`
}

type envelopeResult struct {
	Status     string          `json:"status"`
	ProviderID *string         `json:"provider_id"`
	Error      *string         `json:"error"`
	Output     json.RawMessage `json:"output"`
}

type envelopeTimestamps struct {
	CreatedAt   time.Time  `json:"created_at"`
	SentAt      *time.Time `json:"sent_at"`
	CompletedAt *time.Time `json:"completed_at"`
}

func viewEnvelope(inv invocation.Invocation) envelopeView {
	errMsg := inv.Error
	if errMsg == nil && inv.DeniedReason != nil {
		msg := "denied: " + *inv.DeniedReason
		if inv.Status == invocation.StatusExpired {
			msg = "approval expired"
		}
		errMsg = &msg
	}
	if errMsg == nil && inv.Status == invocation.StatusCancelled {
		msg := "cancelled"
		errMsg = &msg
	}
	ext := ""
	if inv.ExternalID != nil {
		ext = *inv.ExternalID
	}
	var result *resultEnvelopeView
	if env, ok := outbox.ResultEnvelopeOf(inv); ok {
		view := viewResultEnvelope(env)
		result = &view
	}
	return envelopeView{
		ActionID:       inv.ID,
		ExternalID:     ext,
		TenantID:       inv.OrganizationID,
		AutomationID:   inv.AutomationID,
		Type:           "mcp.exec",
		Tool:           envelopeToolView{Name: inv.Integration + "." + inv.Action, Source: inv.Integration, Action: inv.Action},
		Args:           inv.Params,
		Edited:         len(inv.ParamsOriginal) > 0,
		ArgsOriginal:   inv.ParamsOriginal,
		Edits:          inv.Edits,
		Risk:           inv.RiskHint,
		Approval:       envelopeApproval(inv),
		Constraints:    envelopeConstraints{RateBucket: inv.RateBucket, MustRunBefore: inv.MustRunBefore},
		Result:         envelopeResult{Status: envelopeStatus(inv), ProviderID: inv.ProviderRef, Error: errMsg, Output: inv.Result},
		Mode:           inv.Mode,
		ModeSource:     inv.ModeSource,
		Status:         inv.Status,
		ExpiresAt:      inv.ExpiresAt,
		Timestamps:     envelopeTimestamps{CreatedAt: inv.CreatedAt, SentAt: inv.StartedAt, CompletedAt: inv.CompletedAt},
		InvocationPath: "/v1/invocations/" + inv.ID.String(),
		ResultEnvelope: result,
	}
}

// envelopeStatus maps an invocation status to the envelope's result status.
// Outcomes the envelope has no word for (denied, expired, cancelled) are
// skipped: nothing was sent, and result.error says why.
func envelopeStatus(inv invocation.Invocation) string {
	switch inv.Status {
	case invocation.StatusPending, invocation.StatusApproved:
		return "pending"
	case invocation.StatusExecuting:
		return "sending"
	case invocation.StatusCompleted:
		if inv.Conflict {
			return "conflict"
		}
		return "sent"
	case invocation.StatusFailed:
		return "failed"
	default:
		return "skipped"
	}
}

// envelopeApproval is the envelope's approval state: auto when policy let
// it run, required while a human must decide, then granted or denied.
func envelopeApproval(inv invocation.Invocation) string {
	switch {
	case inv.Status == invocation.StatusPending:
		return "required"
	case inv.Status == invocation.StatusDenied || inv.Status == invocation.StatusExpired:
		return "denied"
	case inv.ApprovedBy != nil:
		return "granted"
	default:
		return "auto"
	}
}

// resultEnvelopeView is the Action API contract's result of one action,
// with the contract's own (camelCase) field names.
type resultEnvelopeView struct {
	Status       outbox.ResultStatus `json:"status"`
	ActionType   string              `json:"actionType"`
	RiskTier     policy.Tier         `json:"riskTier"`
	Output       json.RawMessage     `json:"output"`
	Verification verificationView    `json:"verification"`
	Repair       stepView            `json:"repair"`
	Rollback     stepView            `json:"rollback"`
	Feedback     feedbackView        `json:"feedback"`
}

type verificationView struct {
	OK     bool        `json:"ok"`
	Checks []checkView `json:"checks"`
}

type checkView struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
}

type stepView struct {
	Attempted bool `json:"attempted"`
	OK        bool `json:"ok"`
}

// feedbackView is what a planner learns about the outcome beyond its
// status; it converts from outbox.Feedback, so the two keep the same
// fields.
type feedbackView struct {
	InvocationID     uuid.UUID         `json:"invocationId"`
	InvocationStatus invocation.Status `json:"invocationStatus"`
	Mode             string            `json:"mode"`
	ModeSource       string            `json:"modeSource"`
	Reason           string            `json:"reason,omitempty"`
	Error            string            `json:"error,omitempty"`
	ProviderRef      string            `json:"providerRef,omitempty"`
	Conflict         bool              `json:"conflict,omitempty"`
	Attempts         int32             `json:"attempts"`
	DecidedBy        string            `json:"decidedBy,omitempty"`
	ExpiresAt        *time.Time        `json:"expiresAt,omitempty"`
	CompletedAt      *time.Time        `json:"completedAt,omitempty"`
}

func viewResultEnvelope(env outbox.ResultEnvelope) resultEnvelopeView {
	return resultEnvelopeView{
		Status: env.Status, ActionType: env.ActionType, RiskTier: env.RiskTier, Output: env.Output,
		Verification: verificationView{
			OK:     env.Verification.OK,
			Checks: viewEach(env.Verification.Checks, func(c outbox.Check) checkView { return checkView(c) }),
		},
		Repair: stepView(env.Repair), Rollback: stepView(env.Rollback), Feedback: feedbackView(env.Feedback),
	}
}
