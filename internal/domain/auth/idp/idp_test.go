package idp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/auth/idp"
	"github.com/outboxd/outboxd/internal/domain/auth/idp/idptest"
)

// syncBuffer is a bytes.Buffer safe for the refresh goroutine's logs.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func claims() jwt.MapClaims {
	return jwt.MapClaims{"sub": "x", "exp": time.Now().Add(time.Hour).Unix()}
}

// TestNew_FirstFetchFailing: a provider whose keys cannot be had at start
// does not stop the start; the failure is logged, and the first token
// fetches them.
func TestNew_FirstFetchFailing(t *testing.T) {
	t.Parallel()
	p := idptest.New(t)
	p.SetDown(true)
	var logs syncBuffer
	keys, err := idp.New(context.Background(), &idp.Config{Issuer: p.Issuer, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	t.Cleanup(keys.Close)
	require.Equal(t, p.JWKSURL, keys.URL(), "discovered")
	require.Contains(t, logs.String(), "fetching the identity provider's signing keys failed")
	require.Contains(t, logs.String(), "jwks_url="+p.JWKSURL)

	p.SetDown(false)
	tok, err := jwt.Parse(p.Sign(t, "EdDSA", claims()), keys.Keyfunc)
	require.NoError(t, err)
	require.True(t, tok.Valid)
	require.EqualValues(t, 2, p.KeyRequests())
}

func TestDiscover(t *testing.T) {
	t.Parallel()
	var doc atomic.Pointer[map[string]any]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/tenant/.well-known/openid-configuration" {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(*doc.Load())
	}))
	t.Cleanup(srv.Close)
	issuer := srv.URL + "/tenant"

	doc.Store(&map[string]any{"issuer": issuer, "jwks_uri": srv.URL + "/keys"})
	u, err := idp.Discover(context.Background(), srv.Client(), issuer)
	require.NoError(t, err)
	require.Equal(t, srv.URL+"/keys", u)
	_, err = idp.Discover(context.Background(), srv.Client(), issuer+"/")
	require.ErrorContains(t, err, "names issuer", "the document's issuer must be the configured one exactly")

	for _, bad := range []map[string]any{
		{"issuer": "https://impostor.example", "jwks_uri": srv.URL + "/keys"},
		{"issuer": issuer},
		{"issuer": issuer, "jwks_uri": "file:///etc/keys"},
	} {
		doc.Store(&bad)
		_, err := idp.Discover(context.Background(), srv.Client(), issuer)
		require.Error(t, err, bad)
	}
	_, err = idp.Discover(context.Background(), srv.Client(), srv.URL+"/nobody")
	require.ErrorContains(t, err, "404")
}

// TestNew_KeySetTooLarge: a JWK Set answer is read up to a bound, not
// into memory however long it is.
func TestNew_KeySetTooLarge(t *testing.T) {
	t.Parallel()
	var written atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/jwk-set+json")
		_, _ = io.WriteString(w, `{"keys":[{"kty":"RSA","e":"AQAB","n":"`)
		chunk := bytes.Repeat([]byte("A"), 64<<10)
		for range 1024 { // 64 MiB, never closed
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	var logs syncBuffer
	keys, err := idp.New(context.Background(), &idp.Config{Issuer: srv.URL, JWKSURL: srv.URL + "/keys", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	t.Cleanup(keys.Close)
	require.Contains(t, logs.String(), "the JWK Set is larger than 1048576 bytes")
}
