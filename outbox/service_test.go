package outbox_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/outbox"
	"github.com/outboxd/outboxd/policy"
)

type testBundle struct {
	ctx context.Context
	svc *outbox.Service
	app *apptest.Bundle
}

// setup runs the service of an API process (no workers, so nothing it
// enqueues runs) and a context of the default organization.
func setup(t *testing.T) *testBundle {
	t.Helper()
	b := apptest.Start(t, &apptest.Options{Role: "api"})
	return &testBundle{ctx: dbutil.WithOrg(context.Background(), apptest.Org), svc: b.App.Service, app: b}
}

func slackEnvelope(externalID string) outbox.Envelope {
	return outbox.Envelope{
		ExternalID: externalID,
		Tool:       outbox.EnvelopeTool{Source: "slack", Action: "send_message"},
		Args:       json.RawMessage(`{"channel":"C0123456789","text":"hello"}`),
	}
}

var enqueuer = outbox.Enqueuer{OrganizationID: apptest.Org, RequestedBy: "svc", AutomationID: "nightly"}

func TestService_Enqueue(t *testing.T) {
	t.Parallel()
	bundle := setup(t)

	t.Run("ModeFromOverridesReadInTheWrite", func(t *testing.T) {
		_, err := bundle.app.App.Settings.PutModes(bundle.ctx, apptest.Org, "nightly", "admin", map[string]string{"slack:send_message": "allow"}, "")
		require.NoError(t, err)
		inv, created, err := bundle.svc.Enqueue(bundle.ctx, &outbox.EnqueueParams{Enqueuer: enqueuer, Envelope: slackEnvelope("mode-1")})
		require.NoError(t, err)
		require.True(t, created)
		require.Equal(t, invocation.StatusApproved, inv.Status)
		require.Equal(t, "automation_override", inv.ModeSource)

		// A deny written a moment later is never bypassed.
		_, err = bundle.app.App.Settings.PutModes(bundle.ctx, apptest.Org, "nightly", "admin", map[string]string{"slack:send_message": "deny"}, "")
		require.NoError(t, err)
		inv, _, err = bundle.svc.Enqueue(bundle.ctx, &outbox.EnqueueParams{Enqueuer: enqueuer, Envelope: slackEnvelope("mode-2")})
		require.NoError(t, err)
		require.Equal(t, invocation.StatusDenied, inv.Status)
		require.Nil(t, inv.JobID)
	})
	t.Run("RepeatReturnsTheFirst", func(t *testing.T) {
		first, created, err := bundle.svc.Enqueue(bundle.ctx, &outbox.EnqueueParams{Enqueuer: enqueuer, Envelope: slackEnvelope("repeat")})
		require.NoError(t, err)
		require.True(t, created)
		again, created, err := bundle.svc.Enqueue(bundle.ctx, &outbox.EnqueueParams{Enqueuer: enqueuer, Envelope: slackEnvelope("repeat")})
		require.NoError(t, err)
		require.False(t, created)
		require.Equal(t, first.ID, again.ID)

		changed := slackEnvelope("repeat")
		changed.Args = json.RawMessage(`{"channel":"C0123456789","text":"other"}`)
		_, _, err = bundle.svc.Enqueue(bundle.ctx, &outbox.EnqueueParams{Enqueuer: enqueuer, Envelope: changed})
		require.ErrorIs(t, err, errs.IdempotencyMismatch)
	})
	// A repeat of an external id that asks something else of the
	// execution (an approval, a deadline, a bucket, a risk, a retry
	// policy) is a reused key, not a retry: answering it with the first
	// invocation would run without the approval it asked for. Before,
	// only the tool and args were compared.
	t.Run("RepeatAskingOtherTermsIsAMismatch", func(t *testing.T) {
		first, created, err := bundle.svc.Enqueue(bundle.ctx, &outbox.EnqueueParams{Enqueuer: enqueuer, Envelope: slackEnvelope("terms")})
		require.NoError(t, err)
		require.True(t, created)
		deadline := time.Now().Add(time.Hour)
		for name, change := range map[string]func(*outbox.Envelope){
			"approval":        func(e *outbox.Envelope) { e.Approval = "required" },
			"risk":            func(e *outbox.Envelope) { e.Risk = "high" },
			"must_run_before": func(e *outbox.Envelope) { e.Constraints.MustRunBefore = &deadline },
			"rate_bucket":     func(e *outbox.Envelope) { e.Constraints.RateBucket = "slack.minute" },
			"retry":           func(e *outbox.Envelope) { e.Constraints.Retry = &outbox.EnvelopeRetry{MaxAttempts: 2} },
		} {
			env := slackEnvelope("terms")
			change(&env)
			_, _, err := bundle.svc.Enqueue(bundle.ctx, &outbox.EnqueueParams{Enqueuer: enqueuer, Envelope: env})
			require.ErrorIs(t, err, errs.IdempotencyMismatch, name)
		}
		// "auto" is the default approval: the same request.
		env := slackEnvelope("terms")
		env.Approval = "auto"
		again, created, err := bundle.svc.Enqueue(bundle.ctx, &outbox.EnqueueParams{Enqueuer: enqueuer, Envelope: env})
		require.NoError(t, err)
		require.False(t, created)
		require.Equal(t, first.ID, again.ID)
	})
	// An invocation stored by an earlier release holds a hash of the tool
	// and args alone: its envelope, retried after the upgrade, still gets
	// it back, and other args are still a mismatch.
	t.Run("RepeatOfAnInvocationHashedTheOldWayMatches", func(t *testing.T) {
		env := slackEnvelope("old-hash")
		env.Approval = "required"
		first, _, err := bundle.svc.Enqueue(bundle.ctx, &outbox.EnqueueParams{Enqueuer: enqueuer, Envelope: env})
		require.NoError(t, err)
		canonical, err := policy.CanonicalJSON(env.Args)
		require.NoError(t, err)
		old := sha256.Sum256(append([]byte("slack\x00send_message\x00"), canonical...))
		_, err = bundle.app.Pool.Exec(bundle.ctx, `UPDATE action_invocations SET params_hash = $1 WHERE id = $2`, hex.EncodeToString(old[:]), first.ID)
		require.NoError(t, err)

		again, created, err := bundle.svc.Enqueue(bundle.ctx, &outbox.EnqueueParams{Enqueuer: enqueuer, Envelope: env})
		require.NoError(t, err)
		require.False(t, created)
		require.Equal(t, first.ID, again.ID)
		env.Args = json.RawMessage(`{"channel":"C0123456789","text":"other"}`)
		_, _, err = bundle.svc.Enqueue(bundle.ctx, &outbox.EnqueueParams{Enqueuer: enqueuer, Envelope: env})
		require.ErrorIs(t, err, errs.IdempotencyMismatch)
	})
	t.Run("BodyCannotNameAnotherAutomation", func(t *testing.T) {
		env := slackEnvelope("other-automation")
		env.AutomationID = "someone-else"
		_, _, err := bundle.svc.Enqueue(bundle.ctx, &outbox.EnqueueParams{Enqueuer: enqueuer, Envelope: env})
		require.ErrorIs(t, err, errs.AutomationNotAllowed)
	})
	t.Run("RetryPolicyTravelsWithTheInvocation", func(t *testing.T) {
		env := slackEnvelope("retry-policy")
		env.Approval = "required"
		env.Constraints.Retry = &outbox.EnvelopeRetry{MaxAttempts: 3, BaseDelay: "2s"}
		noAutomation := outbox.Enqueuer{OrganizationID: apptest.Org, RequestedBy: "svc"}
		inv, _, err := bundle.svc.Enqueue(bundle.ctx, &outbox.EnqueueParams{Enqueuer: noAutomation, Envelope: env})
		require.NoError(t, err)
		require.Equal(t, invocation.StatusPending, inv.Status)
		require.Equal(t, &invocation.Retry{MaxAttempts: 3, BaseDelay: 2 * time.Second}, inv.Retry)
	})
	t.Run("ConcurrentEnvelopesShareTransactions", func(t *testing.T) {
		// 30 new envelopes, 6 repeats of one of them and 4 that reuse its
		// external id with other args, all at once.
		const fresh, repeats, mismatches = 30, 6, 4
		type outcome struct {
			inv     invocation.Invocation
			created bool
			err     error
		}
		envs := make([]outbox.Envelope, 0, fresh+repeats+mismatches)
		for i := range fresh {
			envs = append(envs, slackEnvelope(fmt.Sprintf("together-%d", i)))
		}
		for range repeats {
			envs = append(envs, slackEnvelope("together-0"))
		}
		for range mismatches {
			env := slackEnvelope("together-0")
			env.Args = json.RawMessage(`{"channel":"C0123456789","text":"other"}`)
			envs = append(envs, env)
		}
		out := make([]outcome, len(envs))
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range envs {
			wg.Go(func() {
				<-start
				inv, created, err := bundle.svc.Enqueue(bundle.ctx, &outbox.EnqueueParams{Enqueuer: enqueuer, Envelope: envs[i]})
				out[i] = outcome{inv, created, err}
			})
		}
		close(start)
		wg.Wait()

		// Each new envelope is created once. Of the envelopes with the
		// external id together-0, the first to commit is created; those
		// with its args get its invocation, the others a mismatch.
		ids := map[uuid.UUID]bool{}
		for i, o := range out[1:fresh] {
			require.NoError(t, o.err, "envelope %d", i+1)
			require.True(t, o.created, "envelope %d", i+1)
			ids[o.inv.ID] = true
		}
		same := append([]int{0}, makeRange(fresh, fresh+repeats)...)
		other := makeRange(fresh+repeats, len(envs))
		winners := same
		for _, i := range other {
			if out[i].created {
				winners, other = other, same
				break
			}
		}
		var created int
		for _, i := range winners {
			require.NoError(t, out[i].err, "envelope %d", i)
			require.Equal(t, out[winners[0]].inv.ID, out[i].inv.ID, "envelope %d", i)
			if out[i].created {
				created++
			}
		}
		require.Equal(t, 1, created, "together-0 is created once")
		for _, i := range other {
			require.ErrorIs(t, out[i].err, errs.IdempotencyMismatch, "envelope %d", i)
		}
		ids[out[winners[0]].inv.ID] = true
		require.Len(t, ids, fresh)

		// Fewer commits than invocations: envelopes that arrived while a
		// transaction ran went together in the next one.
		var writes, invocations int
		require.NoError(t, bundle.app.Pool.QueryRow(context.Background(), `
			SELECT count(DISTINCT e.xid), count(*) FROM invocation_events e
			JOIN action_invocations i ON i.id = e.invocation_id
			WHERE i.external_id LIKE 'together-%' AND e.type = 'created'`).Scan(&writes, &invocations))
		require.Equal(t, fresh, invocations)
		require.Less(t, writes, fresh)
	})
}

// An envelope the batch's transaction fails on (here a deadline Postgres
// cannot store, which JSON cannot carry) is that envelope's error alone:
// the batch is written again one envelope at a time.
func TestService_EnqueueBatchTransactionFailureIsOneItems(t *testing.T) {
	t.Parallel()
	bundle := setup(t)
	bad := slackEnvelope("batch-tx-bad")
	tooLate := time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC)
	bad.Constraints.MustRunBefore = &tooLate
	envs := []outbox.Envelope{slackEnvelope("batch-tx-1"), bad, slackEnvelope("batch-tx-2"), slackEnvelope("batch-tx-1")}
	items, err := bundle.svc.EnqueueBatch(bundle.ctx, &enqueuer, envs)
	require.NoError(t, err)
	require.Len(t, items, 4)
	require.NoError(t, items[0].Err)
	require.True(t, items[0].Created)
	require.Error(t, items[1].Err)
	require.NoError(t, items[2].Err)
	require.True(t, items[2].Created)
	require.NoError(t, items[3].Err)
	require.False(t, items[3].Created)
	require.Equal(t, items[0].Invocation.ID, items[3].Invocation.ID)

	// A repeat of the batch finds what it wrote.
	items, err = bundle.svc.EnqueueBatch(bundle.ctx, &enqueuer, envs)
	require.NoError(t, err)
	require.False(t, items[0].Created)
	require.NoError(t, items[0].Err)
	require.Error(t, items[1].Err)
	require.False(t, items[2].Created)
	require.NoError(t, items[2].Err)
}

func TestService_Decisions(t *testing.T) {
	t.Parallel()
	bundle := setup(t)
	pending := func(externalID string) invocation.Invocation {
		env := slackEnvelope(externalID)
		env.Approval = "required"
		inv, _, err := bundle.svc.Enqueue(bundle.ctx, &outbox.EnqueueParams{Enqueuer: enqueuer, Envelope: env})
		require.NoError(t, err)
		return inv
	}

	t.Run("ApproveThenDenyConflicts", func(t *testing.T) {
		inv := pending("decide-1")
		approved, err := bundle.svc.Approve(bundle.ctx, &outbox.ApproveParams{OrganizationID: apptest.Org, InvocationID: inv.ID.String(), UserID: "alice"})
		require.NoError(t, err)
		require.Equal(t, invocation.StatusApproved, approved.Status)
		_, err = bundle.svc.Deny(bundle.ctx, &outbox.DenyParams{OrganizationID: apptest.Org, InvocationID: inv.ID.String(), UserID: "bob"})
		require.ErrorIs(t, err, errs.Conflict)
	})
	t.Run("PastItsWindowIsExpired", func(t *testing.T) {
		inv := pending("decide-2")
		_, err := bundle.app.Pool.Exec(context.Background(), `UPDATE action_invocations SET expires_at = now() - interval '1s' WHERE id = $1`, inv.ID)
		require.NoError(t, err)
		for range 2 { // found expired, then already expired
			_, err = bundle.svc.Approve(bundle.ctx, &outbox.ApproveParams{OrganizationID: apptest.Org, InvocationID: inv.ID.String(), UserID: "alice"})
			require.ErrorIs(t, err, errs.Expired)
		}
		events, err := bundle.svc.Events(bundle.ctx, apptest.Org, inv.ID.String(), auth.SourceClaim{})
		require.NoError(t, err)
		require.Len(t, events, 2)
		require.Equal(t, invocation.EventExpired, events[1].Type)
	})
	t.Run("AnotherOrgFindsNothing", func(t *testing.T) {
		inv := pending("decide-3")
		other := dbutil.WithOrg(context.Background(), "org-2")
		_, err := bundle.svc.Approve(other, &outbox.ApproveParams{OrganizationID: "org-2", InvocationID: inv.ID.String(), UserID: "mallory"})
		require.ErrorIs(t, err, errs.NotFound)
		// Even a caller that passed the wrong organization to the service
		// gets nothing from the database of another one.
		_, err = bundle.svc.Get(other, apptest.Org, inv.ID.String(), auth.SourceClaim{})
		require.ErrorIs(t, err, errs.NotFound)
	})
}

func makeRange(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// A Watch taken before an envelope is enqueued gives the invocation its
// id, and its wait hears the decision; an envelope that repeats an
// earlier one's external id returns the earlier invocation, which the
// watch waits for by reading it.
func TestService_Watch(t *testing.T) {
	t.Parallel()
	bundle := setup(t)
	env := slackEnvelope("watch-1")
	env.Approval = "required"
	watch := bundle.svc.Watch(bundle.ctx, apptest.Org)
	defer watch.Close()
	inv, created, err := bundle.svc.Enqueue(bundle.ctx, &outbox.EnqueueParams{Enqueuer: enqueuer, Envelope: env, Watch: watch})
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, watch.ID, inv.ID)
	require.Equal(t, invocation.StatusPending, inv.Status)

	waited := make(chan invocation.Invocation, 1)
	go func() {
		latest, err := watch.Wait(bundle.ctx, inv, time.Minute)
		if err != nil {
			t.Error(err)
		}
		waited <- latest
	}()
	_, err = bundle.svc.Deny(bundle.ctx, &outbox.DenyParams{OrganizationID: apptest.Org, InvocationID: inv.ID.String(), UserID: "alice", Reason: "no"})
	require.NoError(t, err)
	require.Equal(t, invocation.StatusDenied, (<-waited).Status)

	again := bundle.svc.Watch(bundle.ctx, apptest.Org)
	defer again.Close()
	repeat, created, err := bundle.svc.Enqueue(bundle.ctx, &outbox.EnqueueParams{Enqueuer: enqueuer, Envelope: env, Watch: again})
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, inv.ID, repeat.ID)
	repeat.Status = invocation.StatusPending // as if read before the denial
	latest, err := again.Wait(bundle.ctx, repeat, time.Minute)
	require.NoError(t, err)
	require.Equal(t, invocation.StatusDenied, latest.Status)
}

// Waits of one organization that hear of their invocations together read
// them together; each gets its own, and a wait that asks as another
// organization finds nothing.
func TestService_WaitsReadTheirOwn(t *testing.T) {
	t.Parallel()
	bundle := setup(t)
	const n = 20
	invs := make([]invocation.Invocation, n)
	for i := range invs {
		env := slackEnvelope(fmt.Sprintf("together-%d", i))
		env.Approval = "required"
		inv, _, err := bundle.svc.Enqueue(bundle.ctx, &outbox.EnqueueParams{Enqueuer: enqueuer, Envelope: env})
		require.NoError(t, err)
		invs[i] = inv
	}
	var wg sync.WaitGroup
	got := make([]invocation.Invocation, n)
	for i := range invs {
		wg.Go(func() {
			latest, err := bundle.svc.Wait(bundle.ctx, invs[i], time.Minute)
			if err != nil {
				t.Error(err)
			}
			got[i] = latest
		})
	}
	for i, inv := range invs {
		reason := fmt.Sprintf("no (%d)", i)
		_, err := bundle.svc.Deny(bundle.ctx, &outbox.DenyParams{OrganizationID: apptest.Org, InvocationID: inv.ID.String(), UserID: "alice", Reason: reason})
		require.NoError(t, err)
	}
	wg.Wait()
	for i, inv := range got {
		require.Equal(t, invs[i].ID, inv.ID)
		require.Equal(t, invocation.StatusDenied, inv.Status)
		require.NotNil(t, inv.Error)
		require.Contains(t, *inv.Error, fmt.Sprintf("no (%d)", i))
	}

	_, err := bundle.svc.Wait(dbutil.WithOrg(context.Background(), "org-2"), invs[0], time.Minute)
	require.ErrorIs(t, err, errs.NotFound, "another organization's wait does not read this one's invocation")
}
