package idp_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/auth/idp"
	"github.com/outboxd/outboxd/internal/domain/auth/idp/idptest"
)

// tlsIssuer serves, over https, a discovery document naming jwksURI, and
// at /keys redirects to redirectKeys when it is set.
func tlsIssuer(t *testing.T, jwksURI func(self string) string, redirectKeys string) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/openid-configuration":
			_ = json.NewEncoder(w).Encode(map[string]any{"issuer": srv.URL, "jwks_uri": jwksURI(srv.URL)})
		case "/keys":
			http.Redirect(w, r, redirectKeys, http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestDiscover_HTTPSIssuerNamingHTTPKeys: the keys of an https issuer are
// fetched over https only. A discovery document naming an http jwks_uri
// would let anyone on the path between outboxd and the provider serve
// their own keys, and so sign any token: refused, saying why.
func TestDiscover_HTTPSIssuerNamingHTTPKeys(t *testing.T) {
	t.Parallel()
	keys := idptest.New(t) // plain http
	srv := tlsIssuer(t, func(string) string { return keys.JWKSURL }, "")
	_, err := idp.Discover(context.Background(), srv.Client(), srv.URL)
	require.ErrorContains(t, err, "is not https")
	_, err = idp.New(context.Background(), &idp.Config{Issuer: srv.URL, Client: srv.Client()})
	require.ErrorContains(t, err, "is not https")

	// An https jwks_uri is taken.
	srv = tlsIssuer(t, func(self string) string { return self + "/jwks" }, "")
	u, err := idp.Discover(context.Background(), srv.Client(), srv.URL)
	require.NoError(t, err)
	require.Equal(t, srv.URL+"/jwks", u)
}

// TestNew_KeysRedirectingElsewhereRefused: the JWK Set is the trust
// anchor of every token: a redirect of its address to another origin, or
// from https to http, is not followed (logged as a failed fetch), so no
// key of the redirect's target is ever accepted.
func TestNew_KeysRedirectingElsewhereRefused(t *testing.T) {
	t.Parallel()
	keys := idptest.New(t) // plain http, another origin
	srv := tlsIssuer(t, func(self string) string { return self + "/keys" }, keys.JWKSURL)
	var logs syncBuffer
	set, err := idp.New(context.Background(), &idp.Config{Issuer: srv.URL, Client: srv.Client(), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	t.Cleanup(set.Close)
	require.Contains(t, logs.String(), "redirect")
	require.EqualValues(t, 0, keys.KeyRequests(), "the redirect was not followed")
	_, err = jwt.Parse(keys.Sign(t, "ES256", claims()), set.Keyfunc)
	require.ErrorIs(t, err, idp.ErrUnknownKey)
	require.EqualValues(t, 0, keys.KeyRequests(), "nor for the token's unknown kid")
}

// TestDiscover_RedirectToHTTPRefused: discovery of an https issuer is
// not redirected to http, where anyone on the path could answer with a
// document naming the issuer and keys of their own.
func TestDiscover_RedirectToHTTPRefused(t *testing.T) {
	t.Parallel()
	var issuer string
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": issuer, "jwks_uri": issuer + "/jwks"})
	}))
	t.Cleanup(plain.Close)
	srv := httptest.NewTLSServer(http.RedirectHandler(plain.URL+"/.well-known/openid-configuration", http.StatusFound))
	t.Cleanup(srv.Close)
	issuer = srv.URL
	_, err := idp.Discover(context.Background(), srv.Client(), srv.URL)
	require.ErrorContains(t, err, "redirect")
}

// TestKeySet_Publishes: a key the set holds under its kid is published;
// another key under that kid, an unknown kid, an encryption key, and the
// keys of a generation the provider rotated away (once fetched) are not.
func TestKeySet_Publishes(t *testing.T) {
	t.Parallel()
	p := idptest.New(t)
	keys, err := idp.New(context.Background(), &idp.Config{Issuer: p.Issuer})
	require.NoError(t, err)
	t.Cleanup(keys.Close)
	for _, alg := range idptest.Algs {
		require.True(t, keys.Publishes(alg+"-1", p.PublicKey(alg)), alg)
		require.False(t, keys.Publishes(alg+"-2", p.PublicKey(alg)), alg)
	}
	require.False(t, keys.Publishes("RS256-1", p.PublicKey("ES256")))
	encKID, enc := p.EncryptionKey()
	require.False(t, keys.Publishes(encKID, enc.Public()))
	require.EqualValues(t, 1, p.KeyRequests(), "Publishes reads the set in memory: an unknown kid fetches nothing")

	old := p.PublicKey("ES256")
	require.NoError(t, p.Rotate())
	_, err = jwt.Parse(p.Sign(t, "ES256", claims()), keys.Keyfunc)
	require.NoError(t, err)
	require.False(t, keys.Publishes("ES256-1", old))
	require.True(t, keys.Publishes("ES256-2", p.PublicKey("ES256")))
}
