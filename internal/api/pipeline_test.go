package api_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/outbox"
	"github.com/outboxd/outboxd/worker"
)

var message = map[string]any{"channel": "C0123456789", "text": "deploy finished"}

func TestInvoke_AllowRunsAndAnswersWithResult(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-allow-token")
	b.SetModes(map[string]string{"slack:send_message": "allow"})

	r := b.Invoke("send_message", message)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	inv := r.Body["invocation"].(map[string]any)
	require.Equal(t, "completed", inv["status"])
	require.Equal(t, "allow", inv["mode"])
	require.Equal(t, "org_default", inv["mode_source"])
	require.Equal(t, "1503435956.000247", inv["provider_ref"])
	require.Equal(t, true, r.Body["result"].(map[string]any)["ok"])

	reqs := b.Slack.Requests()
	require.Len(t, reqs, 1)
	require.Equal(t, "/chat.postMessage", reqs[0].Path)
	require.Equal(t, "Bearer xoxb-allow-token", reqs[0].Authorization)
	require.Equal(t, inv["id"], reqs[0].IdempotencyKey)
	require.Equal(t, "deploy finished", reqs[0].Body["text"])
}

func TestInvoke_RequireApprovalThenApprove(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-token")

	r := b.Invoke("send_message", message)
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	require.Equal(t, "pending", r.Body["status"])
	id := r.Body["invocation_id"].(string)
	inv := r.Body["invocation"].(map[string]any)
	require.Equal(t, "require_approval", inv["mode"])
	require.Equal(t, "inferred_default", inv["mode_source"])
	require.NotNil(t, inv["expires_at"])

	// Nothing reaches Slack while the invocation waits for a human: its job
	// is parked.
	require.Equal(t, "pending", jobState(t, b, id))
	require.Empty(t, b.Slack.Requests())

	r = b.Do("POST", "/v1/invocations/"+id+"/approve", b.Admin(), map[string]string{"mode": "once"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, "approved", r.Body["invocation"].(map[string]any)["status"])

	done := b.WaitStatus(id, "completed", 10*time.Second)
	require.Equal(t, "user-admin", done["approved_by"])
	require.Len(t, b.Slack.Requests(), 1)
}

func TestInvoke_DenyByOverride(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-token")
	b.SetModes(map[string]string{"slack:send_message": "deny"})

	r := b.Invoke("send_message", message)
	require.Equal(t, http.StatusForbidden, r.Status, string(r.Raw))
	inv := r.Body["invocation"].(map[string]any)
	require.Equal(t, "denied", inv["status"])
	require.Equal(t, "policy", inv["denied_reason"])
	require.Equal(t, "action_denied", r.Body["error"].(map[string]any)["code"])
	require.Zero(t, countRows(t, b, `SELECT count(*) FROM river_job WHERE kind = 'execute_action'`), "a denied invocation has no job")
	require.Empty(t, b.Slack.Requests())
}

func TestApprove_Authorization(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	id := b.Invoke("send_message", message).Body["invocation_id"].(string)

	t.Run("MemberIsForbidden", func(t *testing.T) {
		r := b.Do("POST", "/v1/invocations/"+id+"/approve", b.Member(), map[string]string{"mode": "once"})
		require.Equal(t, http.StatusForbidden, r.Status)
	})
	t.Run("SandboxIsForbidden", func(t *testing.T) {
		r := b.Do("POST", "/v1/invocations/"+id+"/approve", b.Sandbox(), map[string]string{"mode": "once"})
		require.Equal(t, http.StatusForbidden, r.Status)
		r = b.Do("POST", "/v1/sessions/"+apptest.Session+"/actions/invocations/"+id+"/deny", b.Sandbox(), map[string]string{})
		require.Equal(t, http.StatusForbidden, r.Status)
	})
	t.Run("OtherOrgIsNotFound", func(t *testing.T) {
		other := b.Token(auth.Claims{Org: "org-2", Kind: auth.KindUser, Role: auth.RoleOwner})
		r := b.Do("POST", "/v1/invocations/"+id+"/approve", other, map[string]string{"mode": "once"})
		require.Equal(t, http.StatusNotFound, r.Status)
		r = b.Do("GET", "/v1/invocations/"+id, other, nil)
		require.Equal(t, http.StatusNotFound, r.Status)
	})
	require.Equal(t, "pending", b.Invocation(id)["status"], "refused calls change nothing")

	t.Run("ApproveTwiceConflicts", func(t *testing.T) {
		r := b.Do("POST", "/v1/sessions/"+apptest.Session+"/actions/invocations/"+id+"/approve", b.Owner(), map[string]string{"mode": "once"})
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		r = b.Do("POST", "/v1/invocations/"+id+"/approve", b.Owner(), map[string]string{"mode": "once"})
		require.Equal(t, http.StatusConflict, r.Status)
		r = b.Do("POST", "/v1/invocations/"+id+"/deny", b.Owner(), map[string]string{"reason": "late"})
		require.Equal(t, http.StatusConflict, r.Status)
	})
}

func TestDeny_CancelsParkedJob(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-token")
	id := b.Invoke("send_message", message).Body["invocation_id"].(string)

	r := b.Do("POST", "/v1/invocations/"+id+"/deny", b.Owner(), map[string]string{"reason": "not today"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	inv := r.Body["invocation"].(map[string]any)
	require.Equal(t, "denied", inv["status"])
	require.Equal(t, "human", inv["denied_reason"])
	require.Equal(t, "not today", inv["error"])

	var state string
	require.NoError(t, b.Pool.QueryRow(context.Background(),
		`SELECT j.state::text FROM river_job j JOIN action_invocations i ON i.job_id = j.id WHERE i.id = $1`, id).Scan(&state))
	require.Equal(t, "cancelled", state)
	require.Empty(t, b.Slack.Requests())
}

func TestApprove_AfterExpiryIsGone(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	id := b.Invoke("send_message", message).Body["invocation_id"].(string)
	_, err := b.Pool.Exec(context.Background(), `UPDATE action_invocations SET expires_at = now() - interval '1 second' WHERE id = $1`, id)
	require.NoError(t, err)

	r := b.Do("POST", "/v1/invocations/"+id+"/approve", b.Owner(), map[string]string{"mode": "once"})
	require.Equal(t, http.StatusGone, r.Status, string(r.Raw))
	require.Equal(t, "expired", r.Body["error"].(map[string]any)["code"])
	require.Equal(t, "expired", b.Invocation(id)["status"])

	// Once expired (here by the first attempt, elsewhere by the expiry job
	// or the sweep), approving and denying still say the window closed.
	r = b.Do("POST", "/v1/invocations/"+id+"/approve", b.Owner(), map[string]string{"mode": "once"})
	requireAPIError(t, r, http.StatusGone, "expired")
	requireAPIError(t, b.Do("POST", "/v1/invocations/"+id+"/deny", b.Owner(), nil), http.StatusGone, "expired")
}

// TestTimeline_RecordsEveryTransition follows an approved invocation through
// the API's timeline, on the org path and on the session path.
func TestTimeline_RecordsEveryTransition(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-timeline")
	id := b.Invoke("send_message", message).Body["invocation_id"].(string)
	r := b.Do("POST", "/v1/invocations/"+id+"/approve", b.Admin(), map[string]string{"mode": "once"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	b.WaitStatus(id, "completed", 10*time.Second)

	steps := func(r *apptest.Response) []string {
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		var out []string
		for _, e := range r.Body["events"].([]any) {
			ev := e.(map[string]any)
			out = append(out, fmt.Sprintf("%s:%v>%v", ev["type"], ev["from_status"], ev["to_status"]))
		}
		return out
	}
	want := []string{"created:<nil>>pending", "approved:pending>approved", "started:approved>executing", "completed:executing>completed"}
	require.Equal(t, want, steps(b.Do("GET", "/v1/invocations/"+id+"/events", b.Member(), nil)))
	require.Equal(t, want, steps(b.Do("GET", "/v1/sessions/"+apptest.Session+"/actions/invocations/"+id+"/events", b.Sandbox(), nil)))
	require.Equal(t, want, steps(b.Do("GET", "/v1/invocations/"+id+"/events", b.Sandbox(), nil)))
	events := b.Do("GET", "/v1/invocations/"+id+"/events", b.Owner(), nil).Body["events"].([]any)
	require.Equal(t, "user-admin", events[1].(map[string]any)["actor"])

	other := b.Token(auth.Claims{Kind: auth.KindSandbox, SessionID: "session-2"})
	requireAPIError(t, b.Do("GET", "/v1/invocations/"+id+"/events", other, nil), http.StatusNotFound, "not_found")
	owner2 := b.Token(auth.Claims{Org: "org-2", Kind: auth.KindUser, Role: auth.RoleOwner})
	requireAPIError(t, b.Do("GET", "/v1/invocations/"+id+"/events", owner2, nil), http.StatusNotFound, "not_found")
}

func TestExpiry_JobExpiresPendingInvocation(t *testing.T) {
	t.Parallel()
	clock := &apptest.Clock{}
	b := apptest.Start(t, &apptest.Options{Clock: clock})
	id := b.Invoke("send_message", message).Body["invocation_id"].(string)
	require.Equal(t, "pending", b.Invocation(id)["status"])

	// The approval window is the default 5 minutes: move River's and the
	// workers' clock past it instead of waiting it out. The expiry job,
	// scheduled for the window's end, runs and expires the invocation.
	clock.Advance(6 * time.Minute)
	inv := b.WaitStatus(id, "expired", 15*time.Second)
	require.Equal(t, "expired", inv["denied_reason"])
	var state string
	require.NoError(t, b.Pool.QueryRow(context.Background(),
		`SELECT j.state::text FROM river_job j JOIN action_invocations i ON i.job_id = j.id WHERE i.id = $1`, id).Scan(&state))
	require.Equal(t, "cancelled", state)
}

func TestExpiry_SweepExpiresWhatTheJobMissed(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{Worker: workerConfigSweep(300 * time.Millisecond)})
	id := b.Invoke("send_message", message).Body["invocation_id"].(string)
	// Lose the per-invocation expiry job and move the deadline into the past:
	// only the sweep can expire it now.
	_, err := b.Pool.Exec(context.Background(), `DELETE FROM river_job WHERE kind = 'expire_invocation'`)
	require.NoError(t, err)
	_, err = b.Pool.Exec(context.Background(), `UPDATE action_invocations SET expires_at = now() - interval '1 second' WHERE id = $1`, id)
	require.NoError(t, err)

	b.WaitStatus(id, "expired", 15*time.Second)
}

func TestInvoke_PendingCapUnderConcurrency(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{Outbox: outbox.Config{PendingPerSession: 3}})

	const n = 12
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = b.Invoke("send_message", map[string]any{"channel": "C1", "text": fmt.Sprint("msg ", i)}).Status
		}()
	}
	wg.Wait()
	counts := map[int]int{}
	for _, s := range statuses {
		counts[s]++
	}
	require.Equal(t, map[int]int{http.StatusAccepted: 3, http.StatusTooManyRequests: n - 3}, counts)

	r := b.Do("GET", "/v1/invocations?status=pending", b.Owner(), nil)
	require.Equal(t, float64(3), r.Body["total"])
}

func TestInvoke_IdempotencyKey(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)

	first := b.Invoke("send_message", message, "Idempotency-Key", "key-1")
	require.Equal(t, http.StatusAccepted, first.Status, string(first.Raw))
	again := b.Invoke("send_message", message, "Idempotency-Key", "key-1")
	require.Equal(t, http.StatusAccepted, again.Status)
	require.Equal(t, first.Body["invocation_id"], again.Body["invocation_id"])

	changed := b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "something else"}, "Idempotency-Key", "key-1")
	require.Equal(t, http.StatusUnprocessableEntity, changed.Status)
	require.Equal(t, "idempotency_mismatch", changed.Body["error"].(map[string]any)["code"])

	r := b.Do("GET", "/v1/invocations", b.Owner(), nil)
	require.Equal(t, float64(1), r.Body["total"])

	// The key is the session's: another session of the org using it, with
	// other params, records its own invocation and learns nothing of the
	// first; its own repeat finds its own.
	other := b.Token(auth.Claims{Kind: auth.KindSandbox, SessionID: "session-other"})
	invokeOther := func(params any) *apptest.Response {
		return b.Do("POST", "/v1/sessions/session-other/actions/invoke", other,
			map[string]any{"integration": "slack", "action": "send_message", "params": params}, "Idempotency-Key", "key-1")
	}
	theirs := invokeOther(map[string]any{"channel": "C0123456789", "text": "something else"})
	require.Equal(t, http.StatusAccepted, theirs.Status, string(theirs.Raw))
	require.NotEqual(t, first.Body["invocation_id"], theirs.Body["invocation_id"])
	theirsAgain := invokeOther(map[string]any{"channel": "C0123456789", "text": "something else"})
	require.Equal(t, theirs.Body["invocation_id"], theirsAgain.Body["invocation_id"])
	require.Equal(t, first.Body["invocation_id"], b.Invoke("send_message", message, "Idempotency-Key", "key-1").Body["invocation_id"])
	require.Equal(t, float64(2), b.Do("GET", "/v1/invocations", b.Owner(), nil).Body["total"])
}

func TestInvoke_IdempotencyKeyConcurrent(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	const n = 8
	ids := make([]any, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i] = b.Invoke("send_message", message, "Idempotency-Key", "same").Body["invocation_id"]
		}()
	}
	wg.Wait()
	for _, id := range ids {
		require.Equal(t, ids[0], id)
	}
	require.Equal(t, float64(1), b.Do("GET", "/v1/invocations", b.Owner(), nil).Body["total"])
}

func TestApprove_AlwaysAllowsNextInvoke(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-token")
	id := b.Invoke("send_message", message).Body["invocation_id"].(string)

	r := b.Do("POST", "/v1/invocations/"+id+"/approve", b.Owner(), map[string]string{"mode": "always"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	b.WaitStatus(id, "completed", 10*time.Second)

	modes := b.Do("GET", "/v1/action-modes", b.Owner(), nil)
	require.Equal(t, "allow", modes.Body["slack:send_message"])

	next := b.Invoke("send_message", message)
	require.Equal(t, http.StatusOK, next.Status, string(next.Raw))
	require.Equal(t, "org_default", next.Body["invocation"].(map[string]any)["mode_source"])
	require.Len(t, b.Slack.Requests(), 2)
}

func TestInvoke_RateLimit(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{Outbox: outbox.Config{InvokesPerMinute: 2, PendingPerSession: 10}})
	require.Equal(t, http.StatusAccepted, b.Invoke("send_message", message).Status)
	require.Equal(t, http.StatusAccepted, b.Invoke("send_message", message).Status)
	r := b.Invoke("send_message", message)
	require.Equal(t, http.StatusTooManyRequests, r.Status)
	require.Equal(t, "rate_limited", r.Body["error"].(map[string]any)["code"])
	require.NotEmpty(t, r.Header.Get("Retry-After"))
}

// TestInvoke_RateLimitUnderConcurrency: invokes of one session that
// arrive together share a transaction, and the limit still lets exactly
// its number through: the group that goes over is done again one invoke
// at a time, and only those over the limit are refused, their counts
// rolled back. Another session's invokes, arriving in the same moments
// and counted by the same statements, are all let through.
func TestInvoke_RateLimitUnderConcurrency(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{Outbox: outbox.Config{InvokesPerMinute: 5, PendingPerSession: 50}})
	const n, other = 12, 5
	statuses := make([]int, n)
	otherStatuses := make([]int, other)
	otherToken := b.Token(auth.Claims{Kind: auth.KindSandbox, SessionID: "session-other"})
	// The limit counts per minute: a round that straddles two minutes
	// proves nothing, so it is run again in the next one.
	for round := 0; ; round++ {
		minute := time.Now().Truncate(time.Minute)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				statuses[i] = b.Invoke("send_message", map[string]any{"channel": "C1", "text": fmt.Sprint("round ", round, " msg ", i)}).Status
			})
		}
		for i := range other {
			wg.Go(func() {
				otherStatuses[i] = b.Do("POST", "/v1/sessions/session-other/actions/invoke", otherToken, map[string]any{
					"integration": "slack", "action": "send_message",
					"params": map[string]any{"channel": "C1", "text": fmt.Sprint("round ", round, " other ", i)},
				}).Status
			})
		}
		wg.Wait()
		if time.Now().Truncate(time.Minute).Equal(minute) || round == 2 {
			break
		}
		time.Sleep(time.Until(time.Now().Truncate(time.Minute).Add(time.Minute)))
	}
	counts := map[int]int{}
	for _, s := range statuses {
		counts[s]++
	}
	require.Equal(t, map[int]int{http.StatusAccepted: 5, http.StatusTooManyRequests: n - 5}, counts)
	require.Equal(t, slices.Repeat([]int{http.StatusAccepted}, other), otherStatuses)
}

// TestApprove_WakesTheWorker checks an approval starts the job at once,
// not at River's next poll: with a poll interval far longer than the wait,
// only the approval's wake-up can run it in time.
func TestApprove_WakesTheWorker(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{Worker: worker.Config{PollInterval: time.Minute}})
	b.StoreSlackToken("xoxb-wake")
	id := b.Invoke("send_message", message).Body["invocation_id"].(string)
	r := b.Do("POST", "/v1/invocations/"+id+"/approve", b.Owner(), map[string]string{"mode": "once"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	b.WaitStatus(id, "completed", 15*time.Second)
}

// TestInvoke_BackToBackIsNotLeftForThePoll checks that a call made just
// after another is fetched when the queue's cooldown ends, not at River's
// next poll (a minute here). River notifies a queue's inserts at most once
// per its client's cooldown: with that the queue's, the second call's job
// went unannounced while the first call's fetch had already run.
func TestInvoke_BackToBackIsNotLeftForThePoll(t *testing.T) {
	t.Parallel()
	cooldown := time.Second
	b := apptest.Start(t, &apptest.Options{Worker: worker.Config{PollInterval: time.Minute, FetchCooldown: cooldown}})
	b.StoreSlackToken("xoxb-back-to-back")
	b.SetModes(map[string]string{"slack:send_message": "allow"})
	// The producer's first fetch, at its start, begins a cooldown; once it
	// has passed, the first call's notification fetches at once.
	time.Sleep(2 * cooldown)
	for range 2 {
		r := b.Invoke("send_message", message) // waits for its result, up to sync_wait (30s)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		require.Equal(t, "completed", r.Body["invocation"].(map[string]any)["status"])
	}
	require.Len(t, b.Slack.Requests(), 2)
}
