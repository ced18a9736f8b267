package mcpfront_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/catalog"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/mcpfront"
	"github.com/outboxd/outboxd/outbox"
	"github.com/outboxd/outboxd/policy"
)

// fakeCatalog lists n allow-mode actions of one source, and one in deny.
type fakeCatalog struct{ n int }

func (f fakeCatalog) Available(context.Context, *catalog.Caller) (*catalog.Listing, error) {
	l := &catalog.Listing{Sources: []catalog.SourceStatus{{Source: "demo", Name: "Demo", Status: "ok"}}}
	for i := range f.n {
		l.Actions = append(l.Actions, catalog.AvailableAction{Source: "demo", Action: fmt.Sprintf("a%d", i), Mode: policy.ModeAllow,
			RiskTier: policy.TierR1, Params: json.RawMessage(`{"type":"object"}`)})
	}
	l.Actions = append(l.Actions, catalog.AvailableAction{Source: "demo", Action: "never", Mode: policy.ModeDeny, Params: json.RawMessage(`{"type":"object"}`)})
	return l, nil
}

func (fakeCatalog) Guide(context.Context, *catalog.Caller, string) (string, error) { return "", nil }

// noOutbox is never reached by listing (a call would panic).
type noOutbox struct{ mcpfront.Outbox }

// tools/list comes in pages of PageSize with a cursor to the next, and
// every tool comes once, deny-mode actions never.
func TestListTools_Pages(t *testing.T) {
	session := connect(t, &mcpfront.Deps{Outbox: noOutbox{}, Catalog: fakeCatalog{n: 5}, PageSize: 2})
	var names []string
	cursor, pages := "", 0
	for {
		page, err := session.ListTools(context.Background(), &mcp.ListToolsParams{Cursor: cursor})
		require.NoError(t, err)
		require.LessOrEqual(t, len(page.Tools), 2)
		for _, tl := range page.Tools {
			names = append(names, tl.Name)
		}
		pages++
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	require.Equal(t, []string{"demo.a0", "demo.a1", "demo.a2", "demo.a3", "demo.a4", "outboxd_wait"}, names)
	require.Equal(t, 3, pages)

	_, err := session.ListTools(context.Background(), &mcp.ListToolsParams{Cursor: "not-a-cursor"})
	require.ErrorContains(t, err, "cursor")
	// Past the end (a list that shrank, or the largest int, which once
	// overflowed the page's end and ended the process): an empty last page.
	for _, past := range []string{"6", "100", "9223372036854775807"} {
		page, err := session.ListTools(context.Background(), &mcp.ListToolsParams{Cursor: past})
		require.NoError(t, err, past)
		require.Empty(t, page.Tools, past)
		require.Empty(t, page.NextCursor, past)
	}
	page, err := session.ListTools(context.Background(), &mcp.ListToolsParams{Cursor: "5"})
	require.NoError(t, err)
	require.Equal(t, "outboxd_wait", page.Tools[0].Name)
	require.Empty(t, page.NextCursor)
}

// panicCatalog panics when asked for a listing.
type panicCatalog struct{ fakeCatalog }

func (panicCatalog) Available(context.Context, *catalog.Caller) (*catalog.Listing, error) {
	panic("a bug")
}

// A panic while serving a request is the request's internal error: the
// SDK serves requests on goroutines it does not recover, where a panic
// would end the whole process (and this test binary); the session goes on
// serving (the second request).
func TestMiddleware_PanicIsAnInternalError(t *testing.T) {
	session := connect(t, &mcpfront.Deps{Outbox: noOutbox{}, Catalog: panicCatalog{}})
	for range 2 {
		_, err := session.ListTools(context.Background(), nil)
		var rpcErr *jsonrpc.Error
		require.ErrorAs(t, err, &rpcErr)
		require.Equal(t, int64(jsonrpc.CodeInternalError), rpcErr.Code)
		require.Equal(t, "internal error", rpcErr.Message)
	}
}

// connect serves a front door on deps to a sandbox token's claims and
// connects the SDK's client to it.
func connect(t *testing.T, deps *mcpfront.Deps) *mcp.ClientSession {
	t.Helper()
	front := mcpfront.New(deps)
	claims := &auth.Claims{Org: "org", Kind: auth.KindSandbox, SessionID: "s"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { front.ServeMCP(w, r, claims, "http://"+r.Host) }))
	t.Cleanup(srv.Close)
	// The HTTP layer verified the token; the request still carries it.
	session, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: &http.Client{Transport: withBearer{}}}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = session.Close() })
	return session
}

// withBearer sends the bearer header the HTTP layer would have checked.
type withBearer struct{}

func (withBearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer verified-upstream")
	return http.DefaultTransport.RoundTrip(r)
}

// brokenOutbox fails every invoke as a database that went away would.
type brokenOutbox struct{ mcpfront.Outbox }

func (brokenOutbox) Watch(context.Context, string) *outbox.Watch { return nil }

func (brokenOutbox) Invoke(context.Context, *outbox.InvokeParams) (invocation.Invocation, error) {
	return invocation.Invocation{}, errors.New(`looking up the requests: ERROR: relation "action_invocations" does not exist`)
}

// An error of outboxd's own reaches the client as an internal error, its
// text (a database's) kept back.
func TestMiddleware_OwnErrorIsAnInternalError(t *testing.T) {
	session := connect(t, &mcpfront.Deps{Outbox: brokenOutbox{}, Catalog: fakeCatalog{n: 1}})
	_, err := session.CallTool(context.Background(), &mcp.CallToolParams{Name: "demo.a0", Arguments: map[string]any{}})
	var rpcErr *jsonrpc.Error
	require.ErrorAs(t, err, &rpcErr)
	require.Equal(t, int64(jsonrpc.CodeInternalError), rpcErr.Code)
	require.Equal(t, "internal error", rpcErr.Message)
}

// brokenCatalog fails every listing as a database that went away would.
type brokenCatalog struct{ fakeCatalog }

func (brokenCatalog) Available(context.Context, *catalog.Caller) (*catalog.Listing, error) {
	return nil, errors.New(`listing: ERROR: relation "connectors" does not exist`)
}

// noChanges is a catalog that never changes.
type noChanges struct{}

func (noChanges) SubscribeCatalog(context.Context, string) (<-chan struct{}, func()) {
	return make(chan struct{}), func() {}
}

// Listing fails on a subscriptions/listen request (2026-07-28) as on
// tools/list: an internal error, the database's text kept back.
func TestMiddleware_ListenErrorIsAnInternalError(t *testing.T) {
	front := mcpfront.New(&mcpfront.Deps{Outbox: noOutbox{}, Catalog: brokenCatalog{}, Changes: noChanges{}})
	defer front.Close()
	for method, body := range map[string]string{
		"subscriptions/listen": `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"notifications":{"toolsListChanged":true}}}`,
		"tools/list":           `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
	} {
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		r.Header.Set("Mcp-Method", method)
		r.Header.Set("Authorization", "Bearer verified-upstream")
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		w := httptest.NewRecorder()
		front.ServeMCP(w, r, &auth.Claims{Org: "org", Kind: auth.KindSandbox, SessionID: "s"}, "http://"+r.Host)
		require.Contains(t, w.Body.String(), `"code":-32603`, body)
		require.Contains(t, w.Body.String(), `"internal error"`, body)
		require.NotContains(t, w.Body.String(), "relation", body)
	}
}
