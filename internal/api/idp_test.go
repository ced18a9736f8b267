package api_test

import (
	"net/http"
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
