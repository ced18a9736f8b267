package signin_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/auth/signin"
	"github.com/outboxd/outboxd/internal/domain/auth/signin/signintest"
	"github.com/outboxd/outboxd/internal/platform/secretbox"
)

type testBundle struct {
	provider *signintest.Provider
	deps     *signin.Deps
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	provider := signintest.Start(t, nil)
	verifier, err := auth.New(context.Background(), &auth.Config{IdP: auth.IdPConfig{Issuer: provider.Issuer, Audience: []string{"outboxd"}}})
	require.NoError(t, err)
	t.Cleanup(verifier.Close)
	box, err := secretbox.New(secretbox.NewKey())
	require.NoError(t, err)
	return &testBundle{provider: provider, deps: &signin.Deps{Box: box, Identity: verifier}}
}

func (b *testBundle) signIn(t *testing.T, cfg signin.Config) *signin.SignIn {
	t.Helper()
	cfg.Issuer, cfg.ClientID, cfg.ClientSecret = b.provider.Issuer, signintest.ClientID, signintest.ClientSecret
	s, err := signin.New(context.Background(), b.deps, &cfg)
	require.NoError(t, err)
	return s
}

// TestSignIn_Start: the authorization request carries the PKCE challenge,
// the state and the nonce, never the secret; the sign-in cookie is
// HttpOnly, SameSite=Lax and Secure exactly when outboxd is reached over
// https.
func TestSignIn_Start(t *testing.T) {
	t.Parallel()
	b := setup(t)

	t.Run("ConfiguredHTTPSRedirect", func(t *testing.T) {
		t.Parallel()
		s := b.signIn(t, signin.Config{RedirectURL: "https://outboxd.example.com/auth/callback"})
		location, cookie, err := s.Start(httptest.NewRequest("GET", "http://internal:8080/auth/login", nil))
		require.NoError(t, err)
		u, err := url.Parse(location)
		require.NoError(t, err)
		q := u.Query()
		require.Equal(t, "https://outboxd.example.com/auth/callback", q.Get("redirect_uri"))
		require.Equal(t, "S256", q.Get("code_challenge_method"))
		require.NotEmpty(t, q.Get("code_challenge"))
		require.NotEmpty(t, q.Get("state"))
		require.NotEmpty(t, q.Get("nonce"))
		require.Equal(t, "openid profile email", q.Get("scope"), "the default scopes")
		require.NotContains(t, location, signintest.ClientSecret)
		require.True(t, cookie.Secure)
		require.True(t, cookie.HttpOnly)
		require.Equal(t, http.SameSiteLaxMode, cookie.SameSite)
		require.NotContains(t, cookie.Value, q.Get("state"), "the state is sealed in the cookie")

		clear, end := s.SignOut(httptest.NewRequest("POST", "http://internal:8080/auth/logout", nil))
		require.True(t, clear.Secure)
		require.Negative(t, clear.MaxAge)
		eu, err := url.Parse(end)
		require.NoError(t, err)
		require.Equal(t, "https://outboxd.example.com/console/", eu.Query().Get("post_logout_redirect_uri"))
	})

	t.Run("DerivedFromForwardedHeaders", func(t *testing.T) {
		t.Parallel()
		req := httptest.NewRequest("GET", "http://internal:8080/auth/login", nil)
		req.Header.Set("X-Forwarded-Proto", "https")
		req.Header.Set("X-Forwarded-Host", "outboxd.example.com")

		trusting := b.signIn(t, signin.Config{TrustForwarded: true, Scopes: []string{"email"}})
		location, cookie, err := trusting.Start(req)
		require.NoError(t, err)
		u, _ := url.Parse(location)
		require.Equal(t, "https://outboxd.example.com/auth/callback", u.Query().Get("redirect_uri"))
		require.Equal(t, "openid email", u.Query().Get("scope"), "openid is always asked for")
		require.True(t, cookie.Secure)

		plain := b.signIn(t, signin.Config{})
		location, cookie, err = plain.Start(req)
		require.NoError(t, err)
		u, _ = url.Parse(location)
		require.Equal(t, "http://internal:8080/auth/callback", u.Query().Get("redirect_uri"), "forwarded headers are ignored unless trusted")
		require.False(t, cookie.Secure)
	})
}

// TestSignIn_Session: no cookie, a forged one and one sealed with another
// key are told apart from a session.
func TestSignIn_Session(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.signIn(t, signin.Config{})
	req := httptest.NewRequest("GET", "/v1/invocations", nil)
	_, err := s.Session(req)
	require.ErrorIs(t, err, signin.ErrNoSession)

	req.AddCookie(&http.Cookie{Name: signin.SessionCookie, Value: "forged"})
	_, err = s.Session(req)
	require.ErrorIs(t, err, signin.ErrInvalidSession)

	// A sign-in cookie is no session cookie, though sealed with the same key.
	_, flow, err := s.Start(httptest.NewRequest("GET", "/auth/login", nil))
	require.NoError(t, err)
	req = httptest.NewRequest("GET", "/v1/invocations", nil)
	req.AddCookie(&http.Cookie{Name: signin.SessionCookie, Value: flow.Value})
	_, err = s.Session(req)
	require.ErrorIs(t, err, signin.ErrInvalidSession)
}

// TestSignIn_Config refuses what cannot work.
func TestSignIn_Config(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for name, cfg := range map[string]signin.Config{
		"NoClientID":            {Issuer: b.provider.Issuer},
		"NoIssuer":              {ClientID: "c"},
		"RedirectNotToCallback": {Issuer: b.provider.Issuer, ClientID: "c", RedirectURL: "https://outboxd.example.com/"},
		"RedirectNotHTTP":       {Issuer: b.provider.Issuer, ClientID: "c", RedirectURL: "ftp://outboxd.example.com/auth/callback"},
	} {
		_, err := signin.New(context.Background(), b.deps, &cfg)
		require.Error(t, err, name)
	}
}
