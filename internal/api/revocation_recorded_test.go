package api_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/revocation"
)

// revokedElsewhereBundle runs outboxd with an allow-mode Slack
// send_message and revocations loaded once an hour: a revocation stored by
// another API process (revokeElsewhere) is not refused by this one's
// check, as within auth.revocation_refresh.
func revokedElsewhereBundle(t *testing.T) *apptest.Bundle {
	t.Helper()
	b := apptest.Start(t, &apptest.Options{Revocations: revocation.Config{RefreshInterval: time.Hour}})
	b.StoreSlackToken("xoxb-revoked-elsewhere")
	b.SetModes(map[string]string{"slack:send_message": "allow"})
	return b
}

// revokeElsewhere revokes p in another API process: stored, and unknown
// to b's process until its next refresh.
func revokeElsewhere(t *testing.T, b *apptest.Bundle, p revocation.Params) revocation.Revocation {
	t.Helper()
	elsewhere, err := revocation.New(&revocation.Deps{Pool: b.Pool, Owner: b.Pool}, &revocation.Config{})
	require.NoError(t, err)
	p.By = "owner-elsewhere"
	r, err := elsewhere.Revoke(t.Context(), apptest.Org, &p)
	require.NoError(t, err)
	return r
}

// invocationWhere is the id of the one invocation of Org matching where,
// a condition on action_invocations with args: one recorded for a request
// answered without it.
func invocationWhere(t *testing.T, b *apptest.Bundle, where string, args ...any) string {
	t.Helper()
	var id string
	require.NoError(t, b.Pool.QueryRow(context.Background(),
		`SELECT id::text FROM action_invocations WHERE organization_id = '`+apptest.Org+`' AND `+where, args...).Scan(&id))
	return id
}

// recordedWithdrawn requires that the one invocation of Org matching
// where (invocationWhere) was recorded and withdrawn by r: cancelled, its
// cancelled event naming r with r's revoker as actor, its job cancelled.
// It returns its id.
func recordedWithdrawn(t *testing.T, b *apptest.Bundle, r revocation.Revocation, what, where string, args ...any) string {
	t.Helper()
	id := invocationWhere(t, b, where, args...)
	require.Equal(t, "cancelled", statusIn(t, b, apptest.Org, id))
	ev := lastEvent(t, b, id, "cancelled")
	require.Equal(t, "owner-elsewhere", ev["actor"])
	require.Contains(t, ev["reason"], fmt.Sprintf(`revocation %d, %s`, r.ID, what))
	waitJobState(t, b, id, "cancelled")
	return id
}

// TestRevocation_RevokedAtRecordIsAnsweredRevoked: a token revoked in
// another API process after this one's check let its request in (this one
// has not refreshed yet) asks for an allow-mode Slack message. The
// transaction recording the invocation finds the revocation and withdraws
// it: recorded cancelled, nothing sent. Before, the request was answered
// as if the invocation had been cancelled by someone: the invoke 409
// conflict, an envelope 201 with status cancelled, a batch 200 with each
// envelope cancelled. Now each is answered as a revoked token is, 401
// token_revoked: the invoke, the envelope, a batch whose every envelope was
// refused; a batch with another envelope refused for its own reason is
// answered 200, each envelope with its error.
func TestRevocation_RevokedAtRecordIsAnsweredRevoked(t *testing.T) {
	t.Parallel()
	b := revokedElsewhereBundle(t)
	agent := b.Token(auth.Claims{Kind: auth.KindSandbox, SessionID: "sess-revoked"})
	nightly := b.Token(auth.Claims{Kind: auth.KindService, AutomationID: "nightly"})
	kept := b.Token(auth.Claims{Kind: auth.KindSandbox, SessionID: "sess-kept"})
	bySession := revokeElsewhere(t, b, revocation.Params{SessionID: "sess-revoked"})
	byAutomation := revokeElsewhere(t, b, revocation.Params{AutomationID: "nightly"})

	send := func(text string) map[string]any {
		return map[string]any{"integration": "slack", "action": "send_message", "params": map[string]any{"channel": "C0123456789", "text": text}}
	}
	r := b.Do("POST", "/v1/sessions/sess-revoked/actions/invoke", agent, send("invoked after the revocation"))
	e := requireAPIError(t, r, http.StatusUnauthorized, "token_revoked")
	require.Equal(t, "token revoked", e["message"], "the verifier's answer to a revoked token")
	require.NotContains(t, r.Body, "invocation")
	invoked := recordedWithdrawn(t, b, bySession, `session_id "sess-revoked"`, `session_id = 'sess-revoked'`)

	r = b.Do("POST", "/v1/envelopes", nightly, envelope("revoked-1", nil))
	requireAPIError(t, r, http.StatusUnauthorized, "token_revoked")
	recordedWithdrawn(t, b, byAutomation, `automation_id "nightly"`, `external_id = 'revoked-1'`)

	r = b.Do("POST", "/v1/envelopes/batch", nightly, map[string]any{"envelopes": []any{envelope("revoked-2", nil), envelope("revoked-3", nil)}})
	requireAPIError(t, r, http.StatusUnauthorized, "token_revoked")
	for _, ext := range []string{"revoked-2", "revoked-3"} {
		recordedWithdrawn(t, b, byAutomation, `automation_id "nightly"`, `external_id = $1`, ext)
	}

	bad := envelope("revoked-bad", map[string]any{"tool": map[string]any{"name": "no-dot"}})
	r = b.Do("POST", "/v1/envelopes/batch", nightly, map[string]any{"envelopes": []any{bad, envelope("revoked-4", nil)}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	items := r.Body["envelopes"].([]any)
	require.Equal(t, "invalid_request", items[0].(map[string]any)["error"].(map[string]any)["code"], string(r.Raw))
	require.Equal(t, "token_revoked", items[1].(map[string]any)["error"].(map[string]any)["code"], string(r.Raw))
	recordedWithdrawn(t, b, byAutomation, `automation_id "nightly"`, `external_id = 'revoked-4'`)

	// Another session's token is answered as asked.
	r = b.Do("POST", "/v1/sessions/sess-kept/actions/invoke", kept, send("kept"))
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))

	waitJobsSettled(t, b)
	require.Zero(t, actionCalls(b, "invoked after the revocation"))
	for _, ext := range []string{"revoked-1", "revoked-2", "revoked-3", "revoked-4"} {
		require.Zero(t, actionCalls(b, "envelope "+ext), ext)
	}
	require.Equal(t, 1, actionCalls(b, "kept"))
	require.Equal(t, "cancelled", statusIn(t, b, apptest.Org, invoked))
}

// TestMCP_RevokedAtRecordIsAToolError: over MCP, a sandbox token (an
// invoke of its session) and a service token (an envelope of its
// automation) revoked in another API process after the session was opened
// call an allow-mode Slack tool. Before, the model read "cancelled: the
// call was cancelled before it ran", as if someone had cancelled it. Now
// it reads a tool error token_revoked saying the token was revoked and
// not to retry, the invocation is recorded cancelled naming the
// revocation, and nothing reaches Slack.
func TestMCP_RevokedAtRecordIsAToolError(t *testing.T) {
	t.Parallel()
	b := revokedElsewhereBundle(t)
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		claims auth.Claims
		params revocation.Params
		what   string
		where  string
	}{
		{"Sandbox", auth.Claims{Kind: auth.KindSandbox, SessionID: "sess-mcp-revoked"}, revocation.Params{SessionID: "sess-mcp-revoked"},
			`session_id "sess-mcp-revoked"`, `session_id = 'sess-mcp-revoked'`},
		{"Service", auth.Claims{Kind: auth.KindService, AutomationID: "mcp-nightly"}, revocation.Params{AutomationID: "mcp-nightly"},
			`automation_id "mcp-nightly"`, `automation_id = 'mcp-nightly'`},
	} {
		session := mcpSession(t, b, b.Token(c.claims))
		r := revokeElsewhere(t, b, c.params)
		text := "mcp call after the revocation, " + c.name
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "slack.send_message",
			Arguments: map[string]any{"channel": "C0123456789", "text": text}})
		require.NoError(t, err, c.name)
		require.True(t, res.IsError, "%s: %s", c.name, callText(t, res))
		require.Contains(t, callText(t, res), `"code":"token_revoked"`, c.name)
		require.Contains(t, callText(t, res), "not run", c.name)
		recordedWithdrawn(t, b, r, c.what, c.where)
		waitJobsSettled(t, b)
		require.Zero(t, actionCalls(b, text), c.name)
	}
	metrics := string(b.Do("GET", "/metrics", "", nil).Raw)
	require.Contains(t, metrics, `outboxd_mcp_calls_total{outcome="refused"} 2`)
}
