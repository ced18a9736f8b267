package signin_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/auth/signin"
	"github.com/outboxd/outboxd/internal/domain/auth/signin/signintest"
	"github.com/outboxd/outboxd/internal/platform/secretbox"
)

// TestSignIn_HTTPSIssuerNamingHTTPEndpoints: the console signs in with an
// https identity provider over https only. A discovery document of an
// https issuer naming an http token endpoint would send the client secret,
// the code and the PKCE verifier in the clear, an http authorization
// endpoint the person's password, an http jwks_uri keys anyone on the path
// could serve: console sign-in refuses to start, saying which.
func TestSignIn_HTTPSIssuerNamingHTTPEndpoints(t *testing.T) {
	t.Parallel()
	box, err := secretbox.New(secretbox.NewKey())
	require.NoError(t, err)
	identity, err := auth.NewVerifier("transport-test-secret-0123456789")
	require.NoError(t, err)
	start := func(t *testing.T, edit func(doc map[string]any)) (*signin.SignIn, error) {
		p := signintest.StartTLS(t, nil, edit)
		return signin.New(context.Background(), &signin.Deps{Box: box, Identity: identity}, &signin.Config{
			Issuer: p.Issuer, ClientID: signintest.ClientID, ClientSecret: signintest.ClientSecret, Client: p.Client(),
		})
	}

	t.Run("AllHTTPS", func(t *testing.T) {
		t.Parallel()
		_, err := start(t, nil)
		require.NoError(t, err)
	})
	for _, field := range []string{"token_endpoint", "authorization_endpoint", "jwks_uri", "end_session_endpoint"} {
		t.Run(field, func(t *testing.T) {
			t.Parallel()
			_, err := start(t, func(doc map[string]any) {
				doc[field] = strings.Replace(doc[field].(string), "https://", "http://", 1)
			})
			require.ErrorContains(t, err, field)
			require.ErrorContains(t, err, "not https")
		})
	}
}
