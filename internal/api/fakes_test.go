package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeBroker is a loopback token broker speaking credential.Broker's
// protocol: POST {"organization_id","integration","user_id","refresh"},
// answer {"access_token","token_type","expires_at","status"}.
type fakeBroker struct {
	server *httptest.Server

	mu sync.Mutex
	// token is handed out until a refresh request, which switches it to
	// refreshed (when set).
	token, refreshed string
	// status, when set, is the connection's status in every answer.
	status string
	// unavailable is how many requests are answered 503 before any other.
	unavailable int
	calls       []brokerCall
}

// brokerCall is what the broker saw of one request.
type brokerCall struct {
	Authorization  string
	OrganizationID string `json:"organization_id"`
	Integration    string `json:"integration"`
	UserID         string `json:"user_id"`
	Refresh        bool   `json:"refresh"`
}

func newFakeBroker(t testing.TB, token, refreshed, status string) *fakeBroker {
	f := &fakeBroker{token: token, refreshed: refreshed, status: status}
	f.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var call brokerCall
		if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&call) != nil {
			writeJSONAnswer(w, http.StatusBadRequest, map[string]any{"error": "bad request"})
			return
		}
		call.Authorization = r.Header.Get("Authorization")
		f.mu.Lock()
		defer f.mu.Unlock()
		f.calls = append(f.calls, call)
		if !strings.HasPrefix(call.Authorization, "Bearer ") {
			writeJSONAnswer(w, http.StatusUnauthorized, map[string]any{"error": "unauthorized"})
			return
		}
		if f.unavailable > 0 {
			f.unavailable--
			writeJSONAnswer(w, http.StatusServiceUnavailable, map[string]any{"error": "try again"})
			return
		}
		if f.status != "" && f.status != "active" {
			writeJSONAnswer(w, http.StatusOK, map[string]any{"status": f.status})
			return
		}
		if call.Refresh && f.refreshed != "" {
			f.token = f.refreshed
		}
		writeJSONAnswer(w, http.StatusOK, map[string]any{
			"access_token": f.token, "token_type": "bearer", "status": "active",
			"expires_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
		})
	}))
	t.Cleanup(f.server.Close)
	return f
}

// failNext makes the next n requests fail with 503.
func (f *fakeBroker) failNext(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unavailable = n
}

func (f *fakeBroker) recorded() []brokerCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func writeJSONAnswer(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
