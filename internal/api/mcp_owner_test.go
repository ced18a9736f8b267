package api_test

import (
	"net/http"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
)

// A 2025-11-25 session is its token's: another token, even with the same
// subject, gets 403 for its requests and cannot end it, whether it acts
// for another automation or session, or is of another organization whose
// id and subject join into the same text.
func TestMCP_SessionIsItsTokensOwn(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	const ping = `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	for name, pair := range map[string][2]auth.Claims{
		"another automation": {
			{Kind: auth.KindService, AutomationID: "automation-1", RegisteredClaims: subject("agent")},
			{Kind: auth.KindService, AutomationID: "automation-2", RegisteredClaims: subject("agent")}},
		"another session": {
			{Kind: auth.KindSandbox, SessionID: "session-1", RegisteredClaims: subject("agent")},
			{Kind: auth.KindSandbox, SessionID: "session-2", RegisteredClaims: subject("agent")}},
		"another organization": {
			{Org: "acme", Kind: auth.KindService, RegisteredClaims: subject("x/agent")},
			{Org: "acme/x", Kind: auth.KindService, RegisteredClaims: subject("agent")}},
	} {
		owner, other := b.Token(pair[0]), b.Token(pair[1])
		session := rawSessionAs(t, b, owner)

		status, body, _ := postMCPAs(t, b, other, ping, "2025-11-25", session)
		require.Equal(t, http.StatusForbidden, status, "%s: %s", name, body)
		require.Equal(t, http.StatusForbidden, deleteMCP(t, b, other, session), name)

		status, body, _ = postMCPAs(t, b, owner, ping, "2025-11-25", session)
		require.Equal(t, http.StatusOK, status, "%s: the session goes on: %s", name, body)
		require.Equal(t, http.StatusNoContent, deleteMCP(t, b, owner, session), name)
	}
}

func subject(sub string) jwt.RegisteredClaims { return jwt.RegisteredClaims{Subject: sub} }

// rawSessionAs is rawSession with token.
func rawSessionAs(t *testing.T, b *apptest.Bundle, token string) string {
	t.Helper()
	status, body, h := postMCPAs(t, b, token, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, "", "")
	require.Equal(t, http.StatusOK, status, body)
	session := h.Get("Mcp-Session-Id")
	require.NotEmpty(t, session)
	status, body, _ = postMCPAs(t, b, token, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "2025-11-25", session)
	require.Equal(t, http.StatusAccepted, status, body)
	return session
}

// deleteMCP ends a 2025-11-25 session with token and returns the status.
func deleteMCP(t *testing.T, b *apptest.Bundle, token, session string) int {
	t.Helper()
	req, err := http.NewRequest("DELETE", b.URL+"/mcp", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", session)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}
