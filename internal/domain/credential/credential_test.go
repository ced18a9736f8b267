package credential_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/credential"
	"github.com/outboxd/outboxd/internal/domain/errs"
)

type brokerServer struct {
	*httptest.Server
	calls    atomic.Int32
	mu       sync.Mutex
	requests []map[string]any
	auth     []string
}

func newBroker(t *testing.T, answer func(n int32, w http.ResponseWriter)) (*brokerServer, *credential.Broker) {
	t.Helper()
	b := &brokerServer{}
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		b.mu.Lock()
		b.requests = append(b.requests, body)
		b.auth = append(b.auth, r.Header.Get("Authorization"))
		b.mu.Unlock()
		answer(b.calls.Add(1), w)
	}))
	t.Cleanup(b.Close)
	broker, err := credential.NewBroker(&credential.BrokerConfig{
		URL:          b.URL,
		ServiceToken: func(org string) (string, error) { return "svc-" + org, nil },
		RetryBase:    10 * time.Millisecond,
	})
	require.NoError(t, err)
	return b, broker
}

func active(token string, expires time.Time) func(int32, http.ResponseWriter) {
	return func(_ int32, w http.ResponseWriter) {
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": token, "token_type": "bearer", "expires_at": expires, "status": "active"})
	}
}

func TestBroker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	req := credential.Request{Org: "o1", Integration: "linear", UserID: "u1"}

	t.Run("CachesUntilExpiry", func(t *testing.T) {
		t.Parallel()
		srv, broker := newBroker(t, active("tok-1", time.Now().Add(time.Hour)))
		for range 3 {
			tok, err := broker.Token(ctx, req, false)
			require.NoError(t, err)
			require.Equal(t, "tok-1", tok.Value)
			require.Equal(t, "oauth", tok.Kind)
		}
		require.Equal(t, int32(1), srv.calls.Load())
		require.Equal(t, "Bearer svc-o1", srv.auth[0])
		require.Equal(t, map[string]any{"organization_id": "o1", "integration": "linear", "user_id": "u1", "refresh": false}, srv.requests[0])

		_, err := broker.Token(ctx, req, true)
		require.NoError(t, err)
		require.Equal(t, int32(2), srv.calls.Load(), "refresh skips the cache")
		require.Equal(t, true, srv.requests[1]["refresh"])
	})
	t.Run("ExpiredTokenIsFetchedAgain", func(t *testing.T) {
		t.Parallel()
		srv, broker := newBroker(t, active("tok", time.Now().Add(10*time.Second)))
		_, err := broker.Token(ctx, req, false)
		require.NoError(t, err)
		_, err = broker.Token(ctx, req, false)
		require.NoError(t, err)
		require.Equal(t, int32(2), srv.calls.Load(), "a token expiring within the skew is not reused")
	})
	t.Run("TransientFailuresRetried", func(t *testing.T) {
		t.Parallel()
		srv, broker := newBroker(t, func(n int32, w http.ResponseWriter) {
			if n < 3 {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			active("tok-3", time.Now().Add(time.Hour))(n, w)
		})
		tok, err := broker.Token(ctx, req, false)
		require.NoError(t, err)
		require.Equal(t, "tok-3", tok.Value)
		require.Equal(t, int32(3), srv.calls.Load())
	})
	t.Run("TransientFailuresExhausted", func(t *testing.T) {
		t.Parallel()
		srv, broker := newBroker(t, func(_ int32, w http.ResponseWriter) { w.WriteHeader(http.StatusBadGateway) })
		_, err := broker.Token(ctx, req, false)
		require.Error(t, err)
		require.Equal(t, int32(3), srv.calls.Load())
		require.False(t, errors.Is(err, credential.ErrInactive))
	})
	t.Run("InactiveIsPermanent", func(t *testing.T) {
		t.Parallel()
		srv, broker := newBroker(t, func(_ int32, w http.ResponseWriter) {
			_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "x", "status": "revoked"})
		})
		_, err := broker.Token(ctx, req, false)
		require.ErrorIs(t, err, credential.ErrInactive)
		require.ErrorContains(t, err, "revoked")
		require.Equal(t, int32(1), srv.calls.Load(), "not retried")
	})
	t.Run("NoConnection", func(t *testing.T) {
		t.Parallel()
		_, broker := newBroker(t, func(_ int32, w http.ResponseWriter) { w.WriteHeader(http.StatusNotFound) })
		_, err := broker.Token(ctx, req, false)
		require.ErrorIs(t, err, errs.NotFound)
	})
}

// A broker URL that is not http(s) is refused at start rather than failing
// every token request later.
func TestNewBroker_RefusesAURLItCannotCall(t *testing.T) {
	t.Parallel()
	mint := func(string) (string, error) { return "t", nil }
	for _, raw := range []string{"ftp://broker.example", "broker.example/tokens", "http://", "https://%zz"} {
		_, err := credential.NewBroker(&credential.BrokerConfig{URL: raw, ServiceToken: mint})
		require.ErrorContains(t, err, "tokens.broker_url must be an http or https URL", raw)
	}
	_, err := credential.NewBroker(&credential.BrokerConfig{URL: "https://broker.example/tokens", ServiceToken: mint})
	require.NoError(t, err)
}

func TestBroker_RefusalIsPermanent(t *testing.T) {
	t.Parallel()
	srv, broker := newBroker(t, func(_ int32, w http.ResponseWriter) { w.WriteHeader(http.StatusForbidden) })
	_, err := broker.Token(context.Background(), credential.Request{Org: "o", Integration: "linear"}, false)
	require.ErrorIs(t, err, credential.ErrRefused)
	require.Equal(t, int32(1), srv.calls.Load(), "not retried")
}
