package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/relay/slackapproval"
	"github.com/outboxd/outboxd/internal/domain/revocation"
)

// withdrawBundle runs outboxd with Slack approval messages in
// C0APPROVALS and Slack credentials in Org and org-2.
func withdrawBundle(t *testing.T) *apptest.Bundle {
	t.Helper()
	b := apptest.Start(t, &apptest.Options{
		Slack: slackapproval.Config{Channel: "C0APPROVALS", SigningSecret: "withdraw-secret"},
	})
	b.StoreSlackToken("xoxb-withdraw")
	r := b.Do("PUT", "/v1/credentials/slack", b.Token(auth.Claims{Org: "org-2", Kind: auth.KindUser, Role: auth.RoleOwner}), map[string]string{"token": "xoxb-org-2"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	return b
}

// askAs invokes send_message in session as token and returns the
// pending invocation's id.
func askAs(t *testing.T, b *apptest.Bundle, session, token, text string) string {
	t.Helper()
	r := b.Do("POST", "/v1/sessions/"+session+"/actions/invoke", token, map[string]any{
		"integration": "slack", "action": "send_message", "params": map[string]any{"channel": "C0123456789", "text": text}})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	require.Equal(t, "pending", r.Body["status"])
	return r.Body["invocation_id"].(string)
}

// actionCalls are the messages the invocations sent (not the approval
// messages): those with text in Slack's C0123456789.
func actionCalls(b *apptest.Bundle, text string) int {
	n := 0
	for _, r := range b.Slack.Requests() {
		if r.Path == "/chat.postMessage" && r.Body["channel"] == "C0123456789" && r.Body["text"] == text {
			n++
		}
	}
	return n
}

// statusIn reads an invocation's status as org's owner.
func statusIn(t *testing.T, b *apptest.Bundle, org, id string) string {
	t.Helper()
	r := b.Do("GET", "/v1/invocations/"+id, b.Token(auth.Claims{Org: org, Kind: auth.KindUser, Role: auth.RoleOwner}), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	return r.Body["invocation"].(map[string]any)["status"].(string)
}

// TestRevocation_WithdrawsWhatTheRevokedAgentAskedFor: an agent acting for
// alice (sandbox, user_id alice) asks for an approval-gated message, and
// alice is revoked by subject. Before, the pending invocation stayed
// pending, an admin who did not know approved it, and it ran with the
// organization's credential. Now the revocation withdraws, in its own
// transaction, what alice's tokens asked for that has not started: the
// pending invocation and the approved one the paused queue has not run
// are cancelled (event naming the revocation, by the revoker), their jobs
// cancelled, the answer and the audit entry count them, an approval is a
// conflict and nothing reaches Slack; the Slack approval message says
// cancelled and the inbox's pending listing drops them. What alice's
// agents finished, another person's agent, alice's agent in another
// organization, and an agent token of alice's issued at the cut-off or
// later are left as they are.
func TestRevocation_WithdrawsWhatTheRevokedAgentAskedFor(t *testing.T) {
	t.Parallel()
	b := withdrawBundle(t)
	agent := func(org, session, user string) string {
		return b.Token(auth.Claims{Org: org, Kind: auth.KindSandbox, SessionID: session, UserID: user})
	}
	alice, bob, aliceElsewhere := agent(apptest.Org, "sess-alice", "alice"), agent(apptest.Org, "sess-bob", "bob"), agent("org-2", "sess-alice", "alice")
	approve := func(id string) *apptest.Response {
		return b.Do("POST", "/v1/invocations/"+id+"/approve", b.Admin(), map[string]string{"mode": "once"})
	}

	// One alice's agent asked for and an admin approved: it ran.
	done := askAs(t, b, "sess-alice", alice, "done before")
	require.Equal(t, http.StatusOK, approve(done).Status)
	b.WaitStatus(done, "completed", 10*time.Second)

	// With the queue paused, an approved invocation waits for its job.
	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/queues/pause", b.Admin(), nil).Status)
	pending := askAs(t, b, "sess-alice", alice, "leaked pending")
	approved := askAs(t, b, "sess-alice", alice, "leaked approved")
	r := approve(approved)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, "approved", r.Body["invocation"].(map[string]any)["status"])
	bobs := askAs(t, b, "sess-bob", bob, "bob's")
	elsewhere := askAs(t, b, "sess-alice", aliceElsewhere, "elsewhere")
	// The approval request reached Slack before the revocation.
	require.Eventually(t, func() bool {
		for _, m := range b.Slack.Requests() {
			if m.Path == "/chat.postMessage" && m.Body["channel"] == "C0APPROVALS" && strings.Contains(fmt.Sprint(m.Body["blocks"]), "leaked pending") {
				return true
			}
		}
		return false
	}, 10*time.Second, 20*time.Millisecond)

	r = b.Do("POST", "/v1/revocations", b.Owner(), map[string]string{"subject": "alice"})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	require.EqualValues(t, 2, r.Body["withdrawn"], "the pending and the approved invocation not started")
	revID := r.Body["id"]
	cut, err := time.Parse(time.RFC3339, r.Body["issued_before"].(string))
	require.NoError(t, err)

	for _, id := range []string{pending, approved} {
		require.Equal(t, "cancelled", statusIn(t, b, apptest.Org, id))
		ev := lastEvent(t, b, id, "cancelled")
		require.Equal(t, "user-owner", ev["actor"], "the revoker")
		require.Contains(t, ev["reason"], fmt.Sprintf("revocation %v", revID))
		require.Contains(t, ev["reason"], `subject "alice"`)
		// Its job is descheduled (a job a worker holds when it is cancelled,
		// as the paused queue's may be, ends cancelled when the worker lets
		// it go).
		waitJobState(t, b, id, "cancelled")
		requireAPIError(t, approve(id), http.StatusConflict, "conflict")
	}
	require.Equal(t, "completed", statusIn(t, b, apptest.Org, done))
	require.Equal(t, "pending", statusIn(t, b, apptest.Org, bobs))
	require.Equal(t, "pending", statusIn(t, b, "org-2", elsewhere))

	entries := b.AuditEntries("action=tokens.revoke")
	require.Len(t, entries, 1)
	require.EqualValues(t, 2, entries[0]["after"].(map[string]any)["withdrawn"])

	// The inbox's pending listing, which the console shows, drops them;
	// the Slack approval message says cancelled (the cancelled event drives
	// both, as for any cancel).
	r = b.Do("GET", "/v1/invocations?status=pending", b.Admin(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	var listed []string
	for _, inv := range r.Body["invocations"].([]any) {
		listed = append(listed, inv.(map[string]any)["id"].(string))
	}
	require.ElementsMatch(t, []string{bobs}, listed)
	require.Eventually(t, func() bool {
		for _, m := range b.Slack.Requests() {
			if m.Path == "/chat.update" && strings.Contains(fmt.Sprint(m.Body["text"]), "Cancelled before anyone decided") &&
				strings.Contains(fmt.Sprint(m.Body["blocks"]), "leaked pending") {
				return true
			}
		}
		return false
	}, 10*time.Second, 20*time.Millisecond)

	// An agent token for alice issued at the cut-off or later asks anew:
	// not withdrawn, approved, it runs once the queue resumes, and the
	// withdrawn ones never do.
	later := signed(t, b, jwt.MapClaims{"org": apptest.Org, "sub": "sandbox-later", "kind": "sandbox", "session_id": "sess-alice",
		"user_id": "alice", "iat": cut.Unix(), "exp": time.Now().Add(time.Hour).Unix()})
	time.Sleep(time.Until(cut))
	fresh := askAs(t, b, "sess-alice", later, "after the revocation")
	require.Equal(t, http.StatusOK, approve(fresh).Status)
	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/queues/resume", b.Admin(), nil).Status)
	b.WaitStatus(fresh, "completed", 10*time.Second)
	require.Equal(t, 1, actionCalls(b, "after the revocation"))
	require.Zero(t, actionCalls(b, "leaked pending"))
	require.Zero(t, actionCalls(b, "leaked approved"))
	require.Equal(t, "cancelled", statusIn(t, b, apptest.Org, approved))
}

// TestRevocation_WithdrawsBySelector: each selector withdraws the
// not-started invocations its tokens asked for, and no other. An
// invocation records its token's jti and iat: a revocation by jti withdraws
// that token's (before, none: not another token's of the same session
// either, which it still leaves); one with issued_before those asked for
// by a token issued before the cut-off, whenever they were created (before,
// those created before the cut-off: also a token's issued at the cut-off,
// and not an old token's created after it). Session and automation
// revocations withdraw theirs.
func TestRevocation_WithdrawsBySelector(t *testing.T) {
	t.Parallel()
	b := withdrawBundle(t)
	sandbox := func(session string) string {
		return b.Token(auth.Claims{Kind: auth.KindSandbox, SessionID: session})
	}
	issued := func(session, jti string, iat time.Time) string {
		claims := jwt.MapClaims{"org": apptest.Org, "sub": "sandbox-" + session, "kind": "sandbox", "session_id": session,
			"iat": iat.Unix(), "exp": time.Now().Add(time.Hour).Unix()}
		if jti != "" {
			claims["jti"] = jti
		}
		return signed(t, b, claims)
	}
	revoke := func(body map[string]string) *apptest.Response {
		r := b.Do("POST", "/v1/revocations", b.Owner(), body)
		require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
		return r
	}

	// By jti: that token's, not another token's of the same session.
	byJTI := askAs(t, b, "sess-jti", issued("sess-jti", "jti-1", time.Now()), "jti")
	sameSession := askAs(t, b, "sess-jti", issued("sess-jti", "jti-2", time.Now()), "jti, another token")
	r := revoke(map[string]string{"jti": "jti-1"})
	require.EqualValues(t, 1, r.Body["withdrawn"])
	require.Equal(t, "cancelled", statusIn(t, b, apptest.Org, byJTI))
	require.Contains(t, lastEvent(t, b, byJTI, "cancelled")["reason"], fmt.Sprintf(`revocation %v, jti "jti-1"`, r.Body["id"]))
	require.Equal(t, "pending", statusIn(t, b, apptest.Org, sameSession))

	// By session: that session's, not another's.
	s1 := askAs(t, b, "sess-1", sandbox("sess-1"), "s1")
	s2 := askAs(t, b, "sess-2", sandbox("sess-2"), "s2")
	require.EqualValues(t, 1, revoke(map[string]string{"session_id": "sess-1"}).Body["withdrawn"])
	require.Equal(t, "cancelled", statusIn(t, b, apptest.Org, s1))
	require.Equal(t, "pending", statusIn(t, b, apptest.Org, s2))

	// By automation: its envelopes, not another automation's.
	enqueue := func(automation, ext string) string {
		r := b.Do("POST", "/v1/envelopes", b.Token(auth.Claims{Kind: auth.KindService, AutomationID: automation}), envelope(ext, nil))
		require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
		return r.Body["action_id"].(string)
	}
	nightly, weekly := enqueue("nightly", "n-1"), enqueue("weekly", "w-1")
	require.EqualValues(t, 1, revoke(map[string]string{"automation_id": "nightly"}).Body["withdrawn"])
	require.Equal(t, "cancelled", statusIn(t, b, apptest.Org, nightly))
	require.Equal(t, "pending", statusIn(t, b, apptest.Org, weekly))

	// By issued_before: the organization's asked for by tokens issued
	// before the cut-off, also after it; not those of a token issued at
	// the cut-off (within the verifier's leeway, before it), nor another
	// organization's.
	other := askAs(t, b, "sess-x", b.Token(auth.Claims{Org: "org-2", Kind: auth.KindSandbox, SessionID: "sess-x"}), "org-2")
	var now time.Time
	require.NoError(t, b.Pool.QueryRow(t.Context(), `SELECT now()`).Scan(&now))
	cut := now.Truncate(time.Second).Add(2 * time.Second)
	old, current := issued("sess-old", "", now.Add(-time.Hour)), issued("sess-new", "", cut)
	oldEarly := askAs(t, b, "sess-old", old, "old token before the cut-off")
	currentEarly := askAs(t, b, "sess-new", current, "token of the cut-off before it")
	time.Sleep(time.Until(cut))
	oldLate := askAs(t, b, "sess-old", old, "old token after the cut-off")
	after := askAs(t, b, "sess-3", sandbox("sess-3"), "after the cut-off")
	r = revoke(map[string]string{"issued_before": cut.UTC().Format(time.RFC3339)})
	require.EqualValues(t, 5, r.Body["withdrawn"], "the other jti's, the other session's, the other automation's and the old token's two")
	require.Contains(t, lastEvent(t, b, weekly, "cancelled")["reason"], "every token issued before "+cut.UTC().Format(time.RFC3339))
	for _, id := range []string{sameSession, s2, weekly, oldEarly, oldLate} {
		require.Equal(t, "cancelled", statusIn(t, b, apptest.Org, id))
	}
	for _, id := range []string{currentEarly, after} {
		require.Equal(t, "pending", statusIn(t, b, apptest.Org, id))
	}
	require.Equal(t, "pending", statusIn(t, b, "org-2", other))
}

// TestRevocation_WithdrawsWhatARevokedTokenAsksForAfterwards: a token is
// revoked in another API process, and this one, which has not refreshed
// its revocations yet (auth.revocation_refresh), still lets the token in.
// Before, what it asked for then was recorded as asked: an allow-mode
// invoke ran (the message reached Slack), an envelope of a revoked
// automation waited for its approval. Now the transaction that records an
// invocation looks for its token's revocations: the invocation is
// withdrawn there, its request answered as a revoked token is (401
// token_revoked), its cancelled event naming the revocation and
// the revoker, its job cancelled, and nothing reaches Slack. Another
// session's token runs as asked.
func TestRevocation_WithdrawsWhatARevokedTokenAsksForAfterwards(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{Revocations: revocation.Config{RefreshInterval: time.Hour}})
	b.StoreSlackToken("xoxb-later")
	b.SetModes(map[string]string{"slack:send_message": "allow"})
	agent := b.Token(auth.Claims{Kind: auth.KindSandbox, SessionID: "sess-revoked"})
	nightly := b.Token(auth.Claims{Kind: auth.KindService, AutomationID: "nightly"})
	kept := b.Token(auth.Claims{Kind: auth.KindSandbox, SessionID: "sess-kept"})

	// Another API process revokes the session and the automation.
	elsewhere, err := revocation.New(&revocation.Deps{Pool: b.Pool, Owner: b.Pool}, &revocation.Config{})
	require.NoError(t, err)
	bySession, err := elsewhere.Revoke(t.Context(), apptest.Org, &revocation.Params{SessionID: "sess-revoked", By: "owner-elsewhere"})
	require.NoError(t, err)
	byAutomation, err := elsewhere.Revoke(t.Context(), apptest.Org, &revocation.Params{AutomationID: "nightly", By: "owner-elsewhere"})
	require.NoError(t, err)

	r := b.Do("POST", "/v1/sessions/sess-revoked/actions/invoke", agent, map[string]any{
		"integration": "slack", "action": "send_message", "params": map[string]any{"channel": "C0123456789", "text": "after the revocation"}})
	requireAPIError(t, r, http.StatusUnauthorized, "token_revoked")
	id := invocationWhere(t, b, `session_id = 'sess-revoked'`)
	ev := lastEvent(t, b, id, "cancelled")
	require.Equal(t, "owner-elsewhere", ev["actor"])
	require.Contains(t, ev["reason"], fmt.Sprintf(`revocation %d, session_id "sess-revoked"`, bySession.ID))

	r = b.Do("POST", "/v1/envelopes", nightly, envelope("n-later", map[string]any{"approval": "required"}))
	requireAPIError(t, r, http.StatusUnauthorized, "token_revoked")
	enqueued := invocationWhere(t, b, `external_id = 'n-later'`)
	require.Contains(t, lastEvent(t, b, enqueued, "cancelled")["reason"], fmt.Sprintf(`revocation %d, automation_id "nightly"`, byAutomation.ID))

	r = b.Do("POST", "/v1/sessions/sess-kept/actions/invoke", kept, map[string]any{
		"integration": "slack", "action": "send_message", "params": map[string]any{"channel": "C0123456789", "text": "kept"}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))

	for _, id := range []string{id, enqueued} {
		require.Equal(t, "cancelled", statusIn(t, b, apptest.Org, id))
		waitJobState(t, b, id, "cancelled")
	}
	waitJobsSettled(t, b)
	require.Zero(t, actionCalls(b, "after the revocation"))
	require.Zero(t, actionCalls(b, "envelope n-later"))
	require.Equal(t, 1, actionCalls(b, "kept"))
}
