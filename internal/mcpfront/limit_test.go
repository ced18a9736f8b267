package mcpfront_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/mcpfront"
	"github.com/outboxd/outboxd/outbox"
)

// heldOutbox answers each invoke once release is closed, so that calls
// stay in flight until then.
type heldOutbox struct {
	mcpfront.Outbox
	started chan struct{}
	release chan struct{}
}

func (heldOutbox) Watch(context.Context, string) *outbox.Watch { return nil }

func (o heldOutbox) Invoke(context.Context, *outbox.InvokeParams) (invocation.Invocation, error) {
	o.started <- struct{}{}
	<-o.release
	return invocation.Invocation{ID: uuid.New(), Status: invocation.StatusCompleted, Result: json.RawMessage(`{"ok":true}`)}, nil
}

// rawFront posts JSON-RPC messages to a front door as 2025-11-25 clients
// with the given claims.
type rawFront struct{ front *mcpfront.Server }

func (f rawFront) post(c *auth.Claims, session, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
	r.Header.Set("Authorization", "Bearer verified-upstream")
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		r.Header.Set("Mcp-Session-Id", session)
		r.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	w := httptest.NewRecorder()
	f.front.ServeMCP(w, r, c, "http://"+r.Host)
	return w
}

// open starts a session and returns its id, or "" with the refusal.
func (f rawFront) open(t *testing.T, c *auth.Claims) (string, string) {
	t.Helper()
	w := f.post(c, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	id := w.Header().Get("Mcp-Session-Id")
	if strings.Contains(w.Body.String(), `"error"`) {
		return "", w.Body.String()
	}
	require.NotEmpty(t, id, w.Body.String())
	require.Equal(t, http.StatusAccepted, f.post(c, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`).Code)
	return id, ""
}

// lists reports whether session still answers tools/list (false: 404,
// the session is gone, or its stream ended unanswered while it closed).
func (f rawFront) lists(session string, c *auth.Claims) bool {
	w := f.post(c, session, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	return w.Code == http.StatusOK && strings.Contains(w.Body.String(), `"tools"`)
}

// An organization keeps at most Config.MaxSessions sessions: a new one
// closes the one idle longest, never another organization's; while each
// has a call in flight, a new one is refused with a JSON-RPC error, and
// admitted again once a call ended.
func TestSessions_LimitPerOrganization(t *testing.T) {
	held := heldOutbox{started: make(chan struct{}), release: make(chan struct{})}
	f := rawFront{mcpfront.New(&mcpfront.Deps{Outbox: held, Catalog: fakeCatalog{n: 1}, Config: mcpfront.Config{MaxSessions: 2}})}
	defer f.front.Close()
	a := &auth.Claims{Org: "org-a", Kind: auth.KindSandbox, SessionID: "s"}
	b := &auth.Claims{Org: "org-b", Kind: auth.KindSandbox, SessionID: "s"}

	b1, _ := f.open(t, b)
	a1, _ := f.open(t, a)
	a2, _ := f.open(t, a)
	require.True(t, f.lists(a1, a), "a1 used after a2: a2 is now idle longest")
	a3, _ := f.open(t, a)
	require.False(t, f.lists(a2, a), "the session idle longest is closed")
	require.True(t, f.lists(a1, a))
	require.True(t, f.lists(a3, a))
	require.True(t, f.lists(b1, b), "another organization's session stays")

	// Both of org-a's sessions with a call in flight: no room.
	call := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"demo.a0","arguments":{}}}`
	done := make(chan string, 2)
	for _, s := range []string{a1, a3} {
		go func() { done <- f.post(a, s, call).Body.String() }()
		<-held.started
	}
	id, refusal := f.open(t, a)
	require.Empty(t, id)
	require.Contains(t, refusal, `"code":-32000`)
	require.Contains(t, refusal, "2 MCP sessions open")
	_, refusal = f.open(t, b)
	require.Empty(t, refusal, "another organization may still open one")

	close(held.release)
	for range 2 {
		require.Contains(t, <-done, `"structuredContent"`)
	}
	a4, refusal := f.open(t, a)
	require.Empty(t, refusal)
	require.True(t, f.lists(a4, a))
}

// A session closed for room answers 404 from the moment it is chosen, as
// JSON: a request that races with its close never gets the stream the
// SDK would open and the closing session leave unanswered (nor an answer
// from a session already given up).
func TestSessions_ClosedForRoomAnswersNotFound(t *testing.T) {
	f := rawFront{mcpfront.New(&mcpfront.Deps{Outbox: heldOutbox{}, Catalog: fakeCatalog{n: 1}, Config: mcpfront.Config{MaxSessions: 1}})}
	defer f.front.Close()
	a := &auth.Claims{Org: "org-a", Kind: auth.KindSandbox, SessionID: "s"}
	prev, _ := f.open(t, a)
	for range 50 {
		next, refusal := f.open(t, a)
		require.Empty(t, refusal)
		w := f.post(a, prev, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		require.Equal(t, http.StatusNotFound, w.Code, w.Body.String())
		require.Equal(t, "application/json", w.Header().Get("Content-Type"))
		require.Contains(t, w.Body.String(), "session not found")
		prev = next
	}
}
