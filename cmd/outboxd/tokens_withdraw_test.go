package main

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
)

// TestTokens_OperatorRevocationWithdraws: `outboxd tokens revoke` withdraws
// the pending invocations the revoked tokens asked for (cancelled, by the
// operator, its job cancelled), says how many, and records the count in
// the audit entry; another session's, and another organization's in the
// same session, stay pending.
func TestTokens_OperatorRevocationWithdraws(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	ask := func(org, session string) string {
		tok := b.Token(auth.Claims{Org: org, Kind: auth.KindSandbox, SessionID: session})
		r := b.Do("POST", "/v1/sessions/"+session+"/actions/invoke", tok, map[string]any{
			"integration": "slack", "action": "send_message", "params": map[string]any{"channel": "C0123456789", "text": "hi"}})
		require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
		return r.Body["invocation_id"].(string)
	}
	statusOf := func(org, id string) string {
		r := b.Do("GET", "/v1/invocations/"+id, b.Token(auth.Claims{Org: org, Kind: auth.KindUser, Role: auth.RoleOwner}), nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		return r.Body["invocation"].(map[string]any)["status"].(string)
	}
	revoked, other, elsewhere := ask(apptest.Org, "sess-leaked"), ask(apptest.Org, "sess-other"), ask("org-2", "sess-leaked")

	env := []string{"DATABASE_URL=" + b.DBURL, "OUTBOXD_AUTH_JWT_SECRET=", "OUTBOXD_SECRETS_KEY="}
	code, out := run(t, env, "tokens", "revoke", "--org", apptest.Org, "--session", "sess-leaked", "--by", "ops")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "withdrew 1 invocation(s)")
	require.EqualValues(t, 1, operatorEntry(t, b, "tokens.revoke")["after"].(map[string]any)["withdrawn"])

	require.Equal(t, "cancelled", statusOf(apptest.Org, revoked))
	r := b.Do("GET", "/v1/invocations/"+revoked+"/events", b.Owner(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	events := r.Body["events"].([]any)
	last := events[len(events)-1].(map[string]any)
	require.Equal(t, "cancelled", last["type"])
	require.Equal(t, "ops", last["actor"])
	require.Contains(t, last["reason"], `session_id "sess-leaked"`)
	var state string
	require.NoError(t, b.Pool.QueryRow(t.Context(),
		`SELECT j.state::text FROM river_job j JOIN action_invocations i ON i.job_id = j.id WHERE i.id = $1`, revoked).Scan(&state))
	require.Equal(t, "cancelled", state)
	require.Equal(t, "pending", statusOf(apptest.Org, other))
	require.Equal(t, "pending", statusOf("org-2", elsewhere))
}
