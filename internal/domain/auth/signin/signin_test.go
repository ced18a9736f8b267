package signin_test

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
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
	provider := signintest.Start(t, map[string]map[string]any{signintest.Admin: {"tenant": "org-a", "role": "admin"}})
	verifier, err := auth.New(context.Background(), &auth.Config{IdP: auth.IdPConfig{
		Issuer: provider.Issuer, Audience: []string{"outboxd"},
		Claims: auth.ClaimNames{Org: "tenant"}, Defaults: auth.ClaimDefaults{Kind: auth.KindUser},
	}})
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

// signInAt goes through the provider's login page as the admin from the
// authorization URL location, and returns the callback's URL on host the
// provider sends the browser to (not followed).
func (b *testBundle) signInAt(t *testing.T, location, host string) string {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	br := &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if req.URL.Host == host {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	resp := b.provider.LogIn(t, br, location, signintest.Admin)
	require.Equal(t, http.StatusFound, resp.StatusCode)
	return resp.Header.Get("Location")
}

// TestSignIn_HostPrefixOverHTTPS: over https the sign-in's and the
// session's cookies are __Host- cookies (Secure, path /, no Domain), so a
// sibling subdomain can neither plant nor overwrite them, and only that
// name is read; over http they keep their plain names, and only those are
// read.
func TestSignIn_HostPrefixOverHTTPS(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const origin = "https://outboxd.example.com"
	b.provider.AllowOrigin(origin)
	s := b.signIn(t, signin.Config{RedirectURL: origin + signin.CallbackPath, Scopes: []string{"openid", signintest.Scope}})
	location, flow, err := s.Start(httptest.NewRequest("GET", "http://internal:8080/auth/login", nil))
	require.NoError(t, err)
	require.Equal(t, "__Host-outboxd_signin", flow.Name)
	require.True(t, flow.Secure)
	require.Equal(t, "/", flow.Path)
	require.Empty(t, flow.Domain)

	callback := b.signInAt(t, location, "outboxd.example.com")
	require.True(t, strings.HasPrefix(callback, origin+signin.CallbackPath+"?"), callback)
	planted := httptest.NewRequest("GET", callback, nil)
	planted.AddCookie(&http.Cookie{Name: "outboxd_signin", Value: flow.Value})
	_, _, err = s.Finish(planted)
	var se *signin.Error
	require.ErrorAs(t, err, &se, "the plain name is not read over https")
	require.Equal(t, "sign_in_not_started", se.Code)

	req := httptest.NewRequest("GET", callback, nil)
	req.AddCookie(flow)
	_, cookies, err := s.Finish(req)
	require.NoError(t, err)
	session := cookies[0]
	require.Equal(t, signin.SecureSessionCookie, session.Name)
	require.Equal(t, "__Host-outboxd_session", session.Name)
	require.True(t, session.Secure)
	require.True(t, session.HttpOnly)
	require.Equal(t, "/", session.Path)
	require.Empty(t, session.Domain)
	require.Equal(t, "__Host-outboxd_signin", cookies[1].Name, "the sign-in's cookie is cleared by its name")

	read := func(s *signin.SignIn, name string) error {
		req := httptest.NewRequest("GET", "http://internal:8080/v1/invocations", nil)
		req.AddCookie(&http.Cookie{Name: name, Value: session.Value})
		_, err := s.Session(req)
		return err
	}
	require.NoError(t, read(s, signin.SecureSessionCookie))
	require.ErrorIs(t, read(s, signin.SessionCookie), signin.ErrNoSession, "over https the weaker name is not read")
	clear, _ := s.SignOut(httptest.NewRequest("POST", "http://internal:8080/auth/logout", nil))
	require.Equal(t, signin.SecureSessionCookie, clear.Name)
	require.True(t, clear.Secure)

	// The same key, reached over http: the plain name only.
	plain := b.signIn(t, signin.Config{})
	require.NoError(t, read(plain, signin.SessionCookie))
	require.ErrorIs(t, read(plain, signin.SecureSessionCookie), signin.ErrNoSession)
	clear, _ = plain.SignOut(httptest.NewRequest("POST", "http://internal:8080/auth/logout", nil))
	require.Equal(t, signin.SessionCookie, clear.Name)
	require.False(t, clear.Secure)
}
