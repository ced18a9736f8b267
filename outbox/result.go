package outbox

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/policy"
)

// ResultStatus is one of the Action API contract's five terminal statuses.
type ResultStatus string

// The contract's terminal statuses.
const (
	// ResultSucceeded: the action completed (and any verification passed).
	ResultSucceeded ResultStatus = "succeeded"
	// ResultReverted: the action failed (its verification did) and a
	// rollback restored the state. Only plugins roll back.
	ResultReverted ResultStatus = "reverted"
	// ResultQueued: a human must approve the action.
	ResultQueued ResultStatus = "queued"
	// ResultRejected: policy, a human, a gate or time stopped the action
	// before it ran.
	ResultRejected ResultStatus = "rejected"
	// ResultFailed: the action ran and failed.
	ResultFailed ResultStatus = "failed"
)

// ResultStatusOf maps an invocation status onto the contract's terminal
// statuses. It reports false while the invocation is cleared to run or
// running (approved, executing): it has no result yet.
func ResultStatusOf(s invocation.Status) (ResultStatus, bool) {
	switch s {
	case invocation.StatusCompleted:
		return ResultSucceeded, true
	case invocation.StatusPending:
		return ResultQueued, true
	case invocation.StatusDenied, invocation.StatusExpired, invocation.StatusSkipped, invocation.StatusCancelled:
		return ResultRejected, true
	case invocation.StatusFailed:
		return ResultFailed, true
	}
	return "", false
}

// ResultEnvelope is the Action API contract's result of one action.
type ResultEnvelope struct {
	Status ResultStatus
	// ActionType is the dispatch key, "<source>.<action>".
	ActionType string
	RiskTier   policy.Tier
	// Output is the provider's answer as stored (redacted, truncated); {}
	// when the action did not succeed.
	Output       json.RawMessage
	Verification Verification
	Repair       Step
	Rollback     Step
	Feedback     Feedback
}

// Verification is what verified the action's effect. The built-in
// sources declare no verification step: OK is true exactly when the action
// succeeded (the provider confirmed the call) and Checks is empty. A
// plugin's verification lists its checks.
type Verification = executors.Verification

// Check is one verification check and its outcome.
type Check = executors.Check

// Step is a repair or a rollback: whether it was attempted and whether it
// succeeded. The built-in sources attempt neither (a retry after a
// transient error is not a repair: it is the same call again); a plugin
// whose verification failed rolls back.
type Step = executors.Step

// Feedback is what the caller (a planner) learns from outboxd about the
// outcome, beyond the status: the invocation behind it and why it ended
// as it did.
type Feedback struct {
	InvocationID uuid.UUID
	// InvocationStatus is outboxd's own status, finer than Status.
	InvocationStatus invocation.Status
	Mode             string
	ModeSource       string
	// Reason is why a rejected action did not run: policy,
	// unknown_mode:<value>, human, expired, cancelled or skipped; empty
	// when it was not rejected.
	Reason string
	// Error is the failure, the human's denial note or the gate that
	// skipped the action.
	Error       string
	ProviderRef string
	Conflict    bool
	Attempts    int32
	DecidedBy   string
	// ExpiresAt is when a queued action's approval expires; nil for the
	// other statuses.
	ExpiresAt   *time.Time
	CompletedAt *time.Time
}

// ResultEnvelopeOf returns the contract's result envelope of inv, and false
// while inv is cleared to run or running. Text is redacted and the output
// truncated as results are when they are stored.
func ResultEnvelopeOf(inv invocation.Invocation) (ResultEnvelope, bool) {
	status, ok := ResultStatusOf(inv.Status)
	if !ok {
		return ResultEnvelope{}, false
	}
	output := json.RawMessage(`{}`)
	if status == ResultSucceeded && len(inv.Result) > 0 {
		output = policy.Truncate(policy.Redact(inv.Result), policy.MaxStoredBytes)
	}
	fb := Feedback{
		InvocationID:     inv.ID,
		InvocationStatus: inv.Status,
		Mode:             inv.Mode,
		ModeSource:       inv.ModeSource,
		Reason:           rejection(inv),
		Error:            policy.RedactString(deref(inv.Error)),
		ProviderRef:      deref(inv.ProviderRef),
		Conflict:         inv.Conflict,
		Attempts:         inv.Attempt,
		DecidedBy:        deref(inv.ApprovedBy),
		CompletedAt:      inv.CompletedAt,
	}
	if status == ResultQueued {
		fb.ExpiresAt = inv.ExpiresAt
	}
	env := ResultEnvelope{
		Status:       status,
		ActionType:   inv.Integration + "." + inv.Action,
		RiskTier:     policy.TierOf(inv.RiskLevel),
		Output:       output,
		Verification: Verification{OK: status == ResultSucceeded, Checks: []Check{}},
		Feedback:     fb,
	}
	if steps := inv.Steps; steps != nil && (status == ResultSucceeded || status == ResultFailed) {
		// The source verified (and maybe rolled back) itself: its record
		// stands, and a failure it rolled back is reverted.
		env.Verification, env.Repair, env.Rollback = steps.Verification, steps.Repair, steps.Rollback
		if env.Verification.Checks == nil {
			env.Verification.Checks = []Check{}
		}
		if status == ResultFailed && steps.Rollback.Attempted && steps.Rollback.OK {
			env.Status = ResultReverted
		}
	}
	return env, true
}

// rejection says why an invocation did not run, "" when it was not
// rejected.
func rejection(inv invocation.Invocation) string {
	switch inv.Status {
	case invocation.StatusDenied, invocation.StatusExpired:
		return deref(inv.DeniedReason)
	case invocation.StatusCancelled:
		return "cancelled"
	case invocation.StatusSkipped:
		return "skipped"
	}
	return ""
}
