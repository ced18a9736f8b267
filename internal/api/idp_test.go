package api_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app"
	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/auth/idp/idptest"
)

// TestAuth_IdentityProviderTokens: a token of the operator's identity
// provider, its claims mapped, works on a REST route beside the HS256
// ones; one for another audience or valid for too long is refused.
func TestAuth_IdentityProviderTokens(t *testing.T) {
	t.Parallel()
	provider := idptest.New(t)
	b := apptest.Start(t, &apptest.Options{Auth: auth.Config{
		MaxLifetime: 2 * time.Hour,
		IdP: auth.IdPConfig{
			Issuer: provider.Issuer, Audience: []string{"outboxd"},
			Claims:   auth.ClaimNames{Org: "tenant", Role: "outboxd_role"},
			Defaults: auth.ClaimDefaults{Kind: auth.KindUser},
		},
	}})
	token := func(extra jwt.MapClaims) string {
		c := jwt.MapClaims{
			"iss": provider.Issuer, "aud": "outboxd", "sub": "alice@example.com",
			"tenant": apptest.Org, "outboxd_role": "member",
			"iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix(),
		}
		for k, v := range extra {
			c[k] = v
		}
		return provider.Sign(t, "ES256", c)
	}

	r := b.Do(http.MethodGet, "/v1/invocations", token(nil), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, http.StatusOK, b.Do(http.MethodGet, "/v1/invocations", b.Member(), nil).Status, "HS256 tokens still work")

	r = b.Do(http.MethodGet, "/v1/invocations", token(jwt.MapClaims{"aud": "another-service"}), nil)
	require.Equal(t, http.StatusUnauthorized, r.Status)
	require.Contains(t, string(r.Raw), "invalid audience")

	r = b.Do(http.MethodGet, "/v1/invocations", token(jwt.MapClaims{"exp": time.Now().Add(30 * 24 * time.Hour).Unix()}), nil)
	require.Equal(t, http.StatusUnauthorized, r.Status)
	require.Contains(t, string(r.Raw), "token lifetime exceeds the maximum")

	// The mapped role decides, as an HS256 token's would.
	r = b.Do(http.MethodPut, "/v1/action-modes", token(nil), map[string]any{"modes": map[string]string{}})
	require.Equal(t, http.StatusForbidden, r.Status, string(r.Raw))

	// The event streams and the MCP front door verify the same way.
	stream := b.Open(context.Background(), "/v1/events", token(nil))
	require.Equal(t, http.StatusOK, stream.StatusCode)
	require.NoError(t, stream.Body.Close())
	sandbox := token(jwt.MapClaims{"kind": "sandbox", "session_id": apptest.Session, "outboxd_role": nil})
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	for tok, want := range map[string]int{
		sandbox: http.StatusOK,
		token(jwt.MapClaims{"kind": "sandbox", "session_id": apptest.Session, "aud": "another-service"}): http.StatusUnauthorized,
	} {
		req, err := http.NewRequest(http.MethodPost, b.URL+"/mcp", strings.NewReader(initialize))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, want, resp.StatusCode, string(body))
	}
}

// TestAuth_WorkersDoNotNeedTheIdentityProvider: a worker process, which
// serves no route that takes a token, starts while the identity provider
// cannot be reached.
func TestAuth_WorkersDoNotNeedTheIdentityProvider(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{Role: app.RoleWorker, Auth: auth.Config{IdP: auth.IdPConfig{
		Issuer: "http://127.0.0.1:1", Audience: []string{"outboxd"},
	}}})
	require.Equal(t, http.StatusOK, b.Do(http.MethodGet, "/healthz", "", nil).Status)
}
