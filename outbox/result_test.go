package outbox_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/outbox"
	"github.com/outboxd/outboxd/policy"
)

// TestResultStatusOf_EveryStatusMaps: each outboxd status has its place in
// the contract's five terminal statuses, or is in flight (no result yet).
// A status added without a decision here fails.
func TestResultStatusOf_EveryStatusMaps(t *testing.T) {
	t.Parallel()

	want := map[invocation.Status]outbox.ResultStatus{
		invocation.StatusPending:   outbox.ResultQueued,
		invocation.StatusApproved:  "", // cleared to run: no result yet
		invocation.StatusExecuting: "", // running: no result yet
		invocation.StatusCompleted: outbox.ResultSucceeded,
		invocation.StatusFailed:    outbox.ResultFailed,
		invocation.StatusDenied:    outbox.ResultRejected,
		invocation.StatusExpired:   outbox.ResultRejected,
		invocation.StatusSkipped:   outbox.ResultRejected,
		invocation.StatusCancelled: outbox.ResultRejected,
	}
	require.Len(t, want, len(invocation.Statuses), "every status needs a decision")
	for _, s := range invocation.Statuses {
		w, listed := want[s]
		require.True(t, listed, "status %s has no mapping", s)
		got, ok := outbox.ResultStatusOf(s)
		require.Equal(t, w != "", ok, s)
		require.Equal(t, w, got, s)
		// Everything that maps is final but pending, which is where the
		// contract hands over to a human.
		require.Equal(t, ok, s.Terminal() || s == invocation.StatusPending, s)
	}
	_, ok := outbox.ResultStatusOf("bogus")
	require.False(t, ok)
}

func TestResultEnvelopeOf(t *testing.T) {
	t.Parallel()

	now := time.Now()
	base := func(status invocation.Status) invocation.Invocation {
		return invocation.Invocation{
			ID: uuid.Must(uuid.NewV7()), Integration: "linear", Action: "create_issue", RiskLevel: "R2",
			Mode: "allow", ModeSource: "org_default", Status: status, Attempt: 1, CreatedAt: now,
		}
	}

	t.Run("Succeeded", func(t *testing.T) {
		t.Parallel()
		inv := base(invocation.StatusCompleted)
		inv.Result = json.RawMessage(`{"id":"ISS-1","token":"tok-leaked"}`)
		inv.ProviderRef, inv.Conflict, inv.CompletedAt = new("ISS-1"), true, &now
		env, ok := outbox.ResultEnvelopeOf(inv)
		require.True(t, ok)
		require.Equal(t, outbox.ResultSucceeded, env.Status)
		require.Equal(t, "linear.create_issue", env.ActionType)
		require.Equal(t, policy.TierR2, env.RiskTier)
		require.JSONEq(t, `{"id":"ISS-1","token":"[REDACTED]"}`, string(env.Output), "output is redacted")
		require.Equal(t, outbox.Verification{OK: true, Checks: []outbox.Check{}}, env.Verification)
		require.Equal(t, outbox.Step{}, env.Repair)
		require.Equal(t, outbox.Step{}, env.Rollback)
		require.Equal(t, "ISS-1", env.Feedback.ProviderRef)
		require.True(t, env.Feedback.Conflict)
		require.Empty(t, env.Feedback.Reason)
	})

	t.Run("OutputIsTruncated", func(t *testing.T) {
		t.Parallel()
		inv := base(invocation.StatusCompleted)
		inv.Result = json.RawMessage(`{"body":"` + strings.Repeat("x", 3*policy.MaxStoredBytes) + `"}`)
		env, _ := outbox.ResultEnvelopeOf(inv)
		require.LessOrEqual(t, len(env.Output), policy.MaxStoredBytes)
		require.Contains(t, string(env.Output), `"_truncated":true`)
	})

	t.Run("Failed", func(t *testing.T) {
		t.Parallel()
		inv := base(invocation.StatusFailed)
		inv.Error = new("upstream said Bearer abc.def.ghi-secret")
		inv.Attempt = 5
		env, ok := outbox.ResultEnvelopeOf(inv)
		require.True(t, ok)
		require.Equal(t, outbox.ResultFailed, env.Status)
		require.JSONEq(t, `{}`, string(env.Output))
		require.False(t, env.Verification.OK)
		require.NotContains(t, env.Feedback.Error, "abc.def.ghi-secret", "errors are redacted")
		require.Equal(t, int32(5), env.Feedback.Attempts)
	})

	t.Run("Rejected", func(t *testing.T) {
		t.Parallel()
		for status, reason := range map[invocation.Status]string{
			invocation.StatusDenied:    "policy",
			invocation.StatusExpired:   "expired",
			invocation.StatusCancelled: "cancelled",
			invocation.StatusSkipped:   "skipped",
		} {
			inv := base(status)
			if status == invocation.StatusDenied || status == invocation.StatusExpired {
				inv.DeniedReason = new(reason)
			}
			env, ok := outbox.ResultEnvelopeOf(inv)
			require.True(t, ok, status)
			require.Equal(t, outbox.ResultRejected, env.Status, status)
			require.Equal(t, reason, env.Feedback.Reason, status)
			require.Equal(t, status, env.Feedback.InvocationStatus)
			require.JSONEq(t, `{}`, string(env.Output))
		}
	})

	t.Run("Queued", func(t *testing.T) {
		t.Parallel()
		inv := base(invocation.StatusPending)
		inv.RiskLevel = "danger" // written before tiers
		inv.ExpiresAt = &now
		env, ok := outbox.ResultEnvelopeOf(inv)
		require.True(t, ok)
		require.Equal(t, outbox.ResultQueued, env.Status)
		require.Equal(t, policy.TierR3, env.RiskTier, "a stored risk word reads as its tier")
		require.Equal(t, &now, env.Feedback.ExpiresAt)
	})

	t.Run("MissingTierIsR4", func(t *testing.T) {
		t.Parallel()
		inv := base(invocation.StatusPending)
		inv.RiskLevel = ""
		env, _ := outbox.ResultEnvelopeOf(inv)
		require.Equal(t, policy.TierR4, env.RiskTier)
	})

	t.Run("InFlight", func(t *testing.T) {
		t.Parallel()
		for _, s := range []invocation.Status{invocation.StatusApproved, invocation.StatusExecuting} {
			_, ok := outbox.ResultEnvelopeOf(base(s))
			require.False(t, ok, s)
		}
	})
}

// TestResultEnvelopeOf_Steps: a source's own verification record stands
// in the envelope, and a failure it rolled back is reverted; one whose
// rollback failed stays failed.
func TestResultEnvelopeOf_Steps(t *testing.T) {
	t.Parallel()
	inv := func(status invocation.Status, steps *executors.Steps) invocation.Invocation {
		return invocation.Invocation{
			ID: uuid.Must(uuid.NewV7()), Integration: "plugin", Action: "record", RiskLevel: "R2",
			Status: status, Result: json.RawMessage(`{"id": 1}`), Steps: steps,
		}
	}
	failedCheck := []executors.Check{{Name: "verify", OK: false, Detail: "missing"}}

	env, ok := outbox.ResultEnvelopeOf(inv(invocation.StatusCompleted, &executors.Steps{
		Verification: executors.Verification{OK: true, Checks: []executors.Check{{Name: "verify", OK: true}}},
	}))
	require.True(t, ok)
	require.Equal(t, outbox.ResultSucceeded, env.Status)
	require.Equal(t, []executors.Check{{Name: "verify", OK: true}}, env.Verification.Checks)

	env, _ = outbox.ResultEnvelopeOf(inv(invocation.StatusFailed, &executors.Steps{
		Verification: executors.Verification{Checks: failedCheck}, Rollback: executors.Step{Attempted: true, OK: true},
	}))
	require.Equal(t, outbox.ResultReverted, env.Status)
	require.Equal(t, outbox.Step{Attempted: true, OK: true}, env.Rollback)
	require.Equal(t, failedCheck, env.Verification.Checks)
	require.JSONEq(t, `{}`, string(env.Output))

	env, _ = outbox.ResultEnvelopeOf(inv(invocation.StatusFailed, &executors.Steps{
		Verification: executors.Verification{Checks: failedCheck}, Rollback: executors.Step{Attempted: true},
	}))
	require.Equal(t, outbox.ResultFailed, env.Status)
	require.Equal(t, outbox.Step{Attempted: true}, env.Rollback)

	env, _ = outbox.ResultEnvelopeOf(inv(invocation.StatusFailed, nil))
	require.Equal(t, outbox.ResultFailed, env.Status)
	require.Equal(t, []executors.Check{}, env.Verification.Checks)
}
