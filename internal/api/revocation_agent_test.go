package api_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app"
	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
)

// TestRevocation_SubjectEndsTheirAgents revokes one person by their
// subject through one API process: the sandbox and service tokens acting
// for them (user_id) are refused (401 token_revoked) there at once and on
// the other process within its refresh, on REST routes and /mcp, where
// their event stream and their MCP session's stream end and the MCP
// session is refused. Another person's agent, the same person's agent in
// another organization, and an agent token for them issued at the cut-off
// or later keep working, as the person's own tokens do.
func TestRevocation_SubjectEndsTheirAgents(t *testing.T) {
	t.Parallel()
	api1 := apptest.Start(t, &apptest.Options{Role: app.RoleAPI})
	api2 := apptest.Start(t, &apptest.Options{Role: app.RoleAPI, DatabaseURL: api1.DBURL, SecretsKey: api1.Config.SecretsKey})
	const person, sessA, sessB = "alice", "sess-alice", "sess-bob"
	agent := func(org, session, user string) string {
		return api1.Token(auth.Claims{Org: org, Kind: auth.KindSandbox, SessionID: session, UserID: user})
	}
	sandboxA := agent(apptest.Org, sessA, person)
	serviceA := api1.Token(auth.Claims{Kind: auth.KindService, AutomationID: "nightly", UserID: person})
	sandboxB := agent(apptest.Org, sessB, "bob")
	elsewhereA := agent("org-2", sessA, person)
	// A route every kind of token may call.
	const probe = "/v1/actions/bootstrap-guide"
	invoke := func(b *apptest.Bundle, session, token string) *apptest.Response {
		return b.Do("POST", "/v1/sessions/"+session+"/actions/invoke", token, map[string]any{
			"integration": "slack", "action": "send_message", "params": map[string]any{"channel": "C0123456789", "text": "hello"}})
	}

	for _, b := range []*apptest.Bundle{api1, api2} {
		for _, tok := range []string{sandboxA, serviceA, sandboxB, elsewhereA} {
			require.Equal(t, http.StatusOK, b.Do("GET", probe, tok, nil).Status)
		}
		r := invoke(b, sessA, sandboxA)
		require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	}
	// On the other process: the agent's event stream, its MCP session
	// and that session's stream.
	stream := api2.Stream("/v1/sessions/"+sessA+"/events", sandboxA)
	mcpID := rawSessionAs(t, api2, sandboxA)
	mcpStream := openSessionStream(t, context.Background(), api2, sandboxA, mcpID)
	defer mcpStream.Body.Close()
	mcpEnded := make(chan struct{})
	go func() {
		defer close(mcpEnded)
		_, _ = io.Copy(io.Discard, mcpStream.Body)
	}()
	status, body, _ := postMCPAs(t, api2, sandboxA, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, "2025-11-25", mcpID)
	require.Equal(t, http.StatusOK, status, body)

	r := api1.Do("POST", "/v1/revocations", api1.Owner(), map[string]string{"subject": person})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	cut, err := time.Parse(time.RFC3339, r.Body["issued_before"].(string))
	require.NoError(t, err)

	// The revoking process refuses at once.
	requireAPIError(t, invoke(api1, sessA, sandboxA), http.StatusUnauthorized, "token_revoked")
	for _, tok := range []string{sandboxA, serviceA} {
		requireAPIError(t, api1.Do("GET", probe, tok, nil), http.StatusUnauthorized, "token_revoked")
	}
	requireAPIError(t, postMCPWith(t, api1, sandboxA), http.StatusUnauthorized, "token_revoked")
	// The other within its refresh: the streams end, REST and /mcp refuse.
	require.True(t, stream.Ended(revocationWait), "the agent's event stream ends")
	select {
	case <-mcpEnded:
	case <-time.After(revocationWait):
		t.Fatal("the agent's MCP session stream stays open")
	}
	untilRefused(t, api2, probe, sandboxA)
	requireAPIError(t, api2.Do("GET", probe, serviceA, nil), http.StatusUnauthorized, "token_revoked")
	requireAPIError(t, invoke(api2, sessA, sandboxA), http.StatusUnauthorized, "token_revoked")
	status, body, _ = postMCPAs(t, api2, sandboxA, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, "2025-11-25", mcpID)
	require.Equal(t, http.StatusUnauthorized, status, "the MCP session opened before is refused: %s", body)
	require.Contains(t, body, "token_revoked")

	// Another person's agent, and the person's agent elsewhere, keep
	// working; so does an agent token for them issued at the cut-off or
	// later, as the person's own new tokens do.
	later := signed(t, api1, jwt.MapClaims{"org": apptest.Org, "sub": "sandbox-" + sessA, "kind": "sandbox", "session_id": sessA,
		"user_id": person, "iat": cut.Unix(), "exp": time.Now().Add(time.Hour).Unix()})
	time.Sleep(time.Until(cut))
	for _, b := range []*apptest.Bundle{api1, api2} {
		for _, tok := range []string{sandboxB, elsewhereA, later} {
			require.Equal(t, http.StatusOK, b.Do("GET", probe, tok, nil).Status)
		}
		r := invoke(b, sessB, sandboxB)
		require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
		r = invoke(b, sessA, later)
		require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	}
}
