package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/worker"
)

const (
	searchSchema = `{"type":"object","properties":{"query":{"type":"string","description":"what to look for"}},"required":["query"]}`
	noteSchema   = `{"type":"object","properties":{"title":{"type":"string","description":"the note's title"}},"required":["title"]}`
	connSecret   = "mcp-connector-secret-4242"
)

// mcpServer is a real MCP server (go-sdk, streamable HTTP) on loopback that
// records tool calls and the auth headers it receives.
type mcpServer struct {
	*httptest.Server
	sdk *mcpsdk.Server

	mu      sync.Mutex
	calls   []*mcpsdk.CallToolParamsRaw
	headers []http.Header
	hang    bool
	release chan struct{}
	// lists, when set, hears of each tools/list, which then waits for
	// listsRelease (holdLists).
	lists, listsRelease chan struct{}
}

func newMCPServer(t *testing.T) *mcpServer {
	t.Helper()
	s := &mcpServer{sdk: mcpsdk.NewServer(&mcpsdk.Implementation{Name: "notes", Version: "v1"}, nil), release: make(chan struct{})}
	s.addTool("search", "Search notes.", searchSchema, &mcpsdk.ToolAnnotations{ReadOnlyHint: true})
	s.addTool("create_note", "Create a note.", noteSchema, nil)
	s.sdk.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			s.mu.Lock()
			lists, release := s.lists, s.listsRelease
			s.mu.Unlock()
			if method == "tools/list" && lists != nil {
				select {
				case lists <- struct{}{}:
					select {
					case <-release:
					case <-ctx.Done():
					}
				case <-release:
				case <-ctx.Done():
				}
			}
			return next(ctx, method, req)
		}
	})
	handler := mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return s.sdk }, &mcpsdk.StreamableHTTPOptions{Stateless: true})
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.headers = append(s.headers, r.Header.Clone())
		s.mu.Unlock()
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	// Runs before Close: a hanging tool must return for Close to finish.
	t.Cleanup(func() { close(s.release) })
	return s
}

func (s *mcpServer) addTool(name, desc, schema string, ann *mcpsdk.ToolAnnotations) {
	s.sdk.AddTool(&mcpsdk.Tool{Name: name, Description: desc, InputSchema: json.RawMessage(schema), Annotations: ann},
		func(ctx context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
			s.mu.Lock()
			s.calls = append(s.calls, req.Params)
			hang := s.hang
			s.mu.Unlock()
			if hang {
				select {
				case <-ctx.Done():
				case <-s.release:
				}
				return nil, errors.New("gave up")
			}
			return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: name + " done"}}}, nil
		})
}

// holdLists holds every tools/list from now on: arrived hears of each,
// and release lets them all go.
func (s *mcpServer) holdLists(t *testing.T) (arrived <-chan struct{}, release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists, s.listsRelease = make(chan struct{}), make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(s.listsRelease) }) }
	t.Cleanup(release)
	return s.lists, release
}

func (s *mcpServer) toolCalls() []*mcpsdk.CallToolParamsRaw {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*mcpsdk.CallToolParamsRaw(nil), s.calls...)
}

func (s *mcpServer) seenHeaders() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.headers...)
}

// createConnector registers srv for the default org and returns its source id.
func createConnector(t *testing.T, b *apptest.Bundle, srv *mcpServer, auth map[string]any) (string, string) {
	t.Helper()
	body := map[string]any{"name": "notes", "url": srv.URL, "transport": "remote_http"}
	if auth != nil {
		body["auth"] = auth
	}
	r := b.Do("POST", "/v1/connectors", b.Owner(), body)
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	conn := r.Body["connector"].(map[string]any)
	return conn["id"].(string), conn["source_id"].(string)
}

func invokeTool(b *apptest.Bundle, source, tool string, params any) *apptest.Response {
	return b.Do("POST", "/v1/sessions/"+apptest.Session+"/actions/invoke", b.Sandbox(),
		map[string]any{"integration": source, "action": tool, "params": params})
}

func TestConnector_ToolsRunThroughThePipeline(t *testing.T) {
	t.Parallel()
	srv := newMCPServer(t)
	b := apptest.Start(t, nil)
	id, source := createConnector(t, b, srv, nil)

	// A read-only tool is inferred allow and answers synchronously.
	r := invokeTool(b, source, "search", map[string]any{"query": "river"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	inv := r.Body["invocation"].(map[string]any)
	require.Equal(t, "allow", inv["mode"])
	require.Equal(t, "read", inv["risk_level"])
	require.Contains(t, string(r.Raw), "search done")
	calls := srv.toolCalls()
	require.Len(t, calls, 1)
	require.Equal(t, inv["id"], calls[0].Meta["idempotency_key"], "the invocation id travels in _meta")
	require.JSONEq(t, `{"query":"river"}`, string(calls[0].Arguments))

	// Params are validated against the tool's inputSchema before anything runs.
	r = invokeTool(b, source, "search", map[string]any{"query": 7})
	require.Equal(t, http.StatusBadRequest, r.Status, string(r.Raw))
	require.Contains(t, string(r.Raw), "query")

	// A tool without annotations is a write: it waits for approval.
	r = invokeTool(b, source, "create_note", map[string]any{"title": "hello"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	noteID := r.Body["invocation_id"].(string)
	require.Len(t, srv.toolCalls(), 1, "nothing runs before approval")
	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/invocations/"+noteID+"/approve", b.Owner(), map[string]string{"mode": "once"}).Status)
	b.WaitStatus(noteID, invocation.StatusCompleted, 10*time.Second)
	require.Len(t, srv.toolCalls(), 2)

	// Validate reports on the live server without saving anything.
	r = b.Do("POST", "/v1/connectors/"+id+"/validate", b.Owner(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, true, r.Body["reachable"])
	require.Equal(t, float64(2), r.Body["tool_count"])
	require.NotEmpty(t, r.Body["protocol_version"])

	// Guides are generated from the tool definitions.
	r = b.Do("GET", "/v1/sessions/"+apptest.Session+"/actions/guide/"+source, b.Sandbox(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Contains(t, string(r.Raw), source+".create_note")
	require.Contains(t, string(r.Raw), "`title`")
}

func TestConnector_DriftGuard(t *testing.T) {
	t.Parallel()
	srv := newMCPServer(t)
	b := apptest.Start(t, &apptest.Options{ConnectorCacheTTL: time.Millisecond})
	id, source := createConnector(t, b, srv, nil)
	// redefine changes the server's tool and waits out the 1 ms tool-list
	// cache, so the next invoke lists the tools again.
	redefine := func(description, schema string) {
		srv.addTool("create_note", description, schema, nil)
		time.Sleep(2 * time.Millisecond)
	}

	r := b.Do("PUT", "/v1/connectors/"+id+"/tools", b.Owner(), map[string]string{"create_note": "allow"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	r = invokeTool(b, source, "create_note", map[string]any{"title": "reviewed"})
	require.Equal(t, http.StatusOK, r.Status, "a reviewed allow runs: %s", r.Raw)

	// A description-only change is not drift.
	redefine("Create a note (now with more words).",
		`{"type":"object","properties":{"title":{"type":"string","description":"a different description"}},"required":["title"]}`)
	r = invokeTool(b, source, "create_note", map[string]any{"title": "still fine"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))

	// A schema change is: the reviewed allow now needs approval.
	redefine("Create a note.",
		`{"type":"object","properties":{"title":{"type":"string"},"folder":{"type":"string"}},"required":["title","folder"]}`)
	r = invokeTool(b, source, "create_note", map[string]any{"title": "drifted", "folder": "inbox"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	inv := r.Body["invocation"].(map[string]any)
	require.Equal(t, "require_approval", inv["mode"])
	require.Equal(t, "drift_guard", inv["mode_source"])

	tools := b.Do("GET", "/v1/connectors/"+id+"/tools", b.Owner(), nil)
	require.Equal(t, http.StatusOK, tools.Status, string(tools.Raw))
	var note map[string]any
	for _, tl := range tools.Body["tools"].([]any) {
		if tl.(map[string]any)["name"] == "create_note" {
			note = tl.(map[string]any)
		}
	}
	require.Equal(t, true, note["drifted"])
	require.Equal(t, "allow", note["reviewed_mode"])
	require.NotEqual(t, note["hash"], note["reviewed_hash"])

	avail := b.Do("GET", "/v1/sessions/"+apptest.Session+"/actions/available", b.Sandbox(), nil)
	require.Contains(t, string(avail.Raw), `"drifted":true`)
	metrics := b.Do("GET", "/metrics", "", nil)
	require.Contains(t, string(metrics.Raw), `outboxd_connector_drift_total{source="`+source+`"} 1`)
	require.Contains(t, string(metrics.Raw), `outboxd_connector_list_duration_seconds_count{outcome="ok"}`)

	// Re-review re-arms the guard; a reviewed deny stays deny even after drift.
	r = b.Do("PUT", "/v1/connectors/"+id+"/tools", b.Owner(), map[string]string{"create_note": "deny"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	redefine("Create a note.", noteSchema)
	r = invokeTool(b, source, "create_note", map[string]any{"title": "denied"})
	require.Equal(t, http.StatusForbidden, r.Status, string(r.Raw))
}

func TestConnector_UnreachableServerLeavesOthersListed(t *testing.T) {
	t.Parallel()
	srv := newMCPServer(t)
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-listing")
	_, source := createConnector(t, b, srv, nil)
	srv.Close()

	r := b.Do("GET", "/v1/sessions/"+apptest.Session+"/actions/available", b.Sandbox(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	var sawSlack bool
	for _, a := range r.Body["actions"].([]any) {
		require.NotEqual(t, source, a.(map[string]any)["source"])
		sawSlack = sawSlack || a.(map[string]any)["source"] == "slack"
	}
	require.True(t, sawSlack)
	var status map[string]any
	for _, s := range r.Body["sources"].([]any) {
		if s.(map[string]any)["source"] == source {
			status = s.(map[string]any)
		}
	}
	require.Equal(t, "unreachable", status["status"])
	require.NotEmpty(t, status["error"])
}

func TestConnector_HangingServerIsRetriedThenFails(t *testing.T) {
	t.Parallel()
	srv := newMCPServer(t)
	srv.hang = true
	b := apptest.Start(t, &apptest.Options{Worker: worker.Config{MaxAttempts: 2, CallTimeout: 300 * time.Millisecond, RetryBaseDelay: 50 * time.Millisecond}})
	_, source := createConnector(t, b, srv, nil)

	r := invokeTool(b, source, "search", map[string]any{"query": "slow"})
	id := r.Body["invocation"].(map[string]any)["id"].(string)
	b.WaitStatus(id, invocation.StatusFailed, 20*time.Second)
	require.Len(t, srv.toolCalls(), 2, "one call per attempt")
}

func TestConnector_AuthReachesServerAndSecretsStayHidden(t *testing.T) {
	t.Parallel()
	var logs apptest.Logs
	srv := newMCPServer(t)
	b := apptest.Start(t, &apptest.Options{Logs: &logs})

	_, bearerSource := createConnector(t, b, srv, map[string]any{"type": "bearer", "secret": connSecret})
	r := invokeTool(b, bearerSource, "search", map[string]any{"query": "auth"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	var sawBearer bool
	for _, h := range srv.seenHeaders() {
		sawBearer = sawBearer || h.Get("Authorization") == "Bearer "+connSecret
	}
	require.True(t, sawBearer)

	other := newMCPServer(t)
	r = b.Do("POST", "/v1/connectors", b.Owner(), map[string]any{
		"name": "custom", "url": other.URL, "auth": map[string]any{"type": "custom_header", "header_name": "X-Api-Key", "secret": connSecret},
	})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	require.NotContains(t, string(r.Raw), connSecret)
	customSource := r.Body["connector"].(map[string]any)["source_id"].(string)
	r = invokeTool(b, customSource, "search", map[string]any{"query": "header"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, connSecret, other.seenHeaders()[0].Get("X-Api-Key"))

	list := b.Do("GET", "/v1/connectors", b.Owner(), nil)
	require.Equal(t, http.StatusOK, list.Status)
	require.Len(t, list.Body["connectors"], 2)
	require.NotContains(t, string(list.Raw), connSecret)

	for _, q := range []string{
		`SELECT coalesce(string_agg(row_to_json(c)::text, ''), '') FROM org_connectors c`,
		`SELECT coalesce(string_agg(row_to_json(i)::text, ''), '') FROM action_invocations i`,
		`SELECT coalesce(string_agg(encode(sealed, 'escape'), ''), '') FROM credentials`,
		`SELECT coalesce(string_agg(args::text || coalesce(errors::text, ''), ''), '') FROM river_job`,
	} {
		var dump string
		require.NoError(t, b.Pool.QueryRow(context.Background(), q).Scan(&dump))
		require.NotContains(t, dump, connSecret, q)
	}
	require.NotEmpty(t, logs.String())
	require.NotContains(t, logs.String(), connSecret)
}

func TestConnector_CRUDAndURLSafety(t *testing.T) {
	t.Parallel()
	srv := newMCPServer(t)
	b := apptest.Start(t, &apptest.Options{DenyPrivateNetworks: true})

	r := b.Do("POST", "/v1/connectors", b.Owner(), map[string]any{"name": "local", "url": srv.URL})
	require.Equal(t, http.StatusBadRequest, r.Status, string(r.Raw))
	require.Contains(t, strings.ToLower(string(r.Raw)), "url")
	for _, url := range []string{"file:///etc/passwd", "http://169.254.169.254/latest", "http://10.0.0.1/mcp", "ftp://example.com"} {
		r = b.Do("POST", "/v1/connectors", b.Owner(), map[string]any{"name": "bad", "url": url})
		require.Equal(t, http.StatusBadRequest, r.Status, url)
	}

	r = b.Do("POST", "/v1/connectors", b.Member(), map[string]any{"name": "x", "url": "https://mcp.example.com/mcp"})
	require.Equal(t, http.StatusForbidden, r.Status)
	r = b.Do("POST", "/v1/connectors", b.Owner(), map[string]any{"name": "x", "url": "https://mcp.example.com/mcp", "auth": map[string]any{"type": "bearer"}})
	require.Equal(t, http.StatusBadRequest, r.Status, "bearer needs a secret")

	r = b.Do("POST", "/v1/connectors", b.Owner(), map[string]any{"name": "remote", "url": "https://mcp.example.com/mcp"})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	id := r.Body["connector"].(map[string]any)["id"].(string)
	r = b.Do("POST", "/v1/connectors", b.Owner(), map[string]any{"name": "remote", "url": "https://mcp.example.com/other"})
	require.Equal(t, http.StatusConflict, r.Status, "names are unique per org")

	r = b.Do("PATCH", "/v1/connectors/"+id, b.Owner(), map[string]any{"enabled": false, "risk_policy": map[string]any{"default": "read"}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, false, r.Body["connector"].(map[string]any)["enabled"])
	r = b.Do("PATCH", "/v1/connectors/"+id, b.Owner(), map[string]any{"url": "http://127.0.0.1:1/mcp"})
	require.Equal(t, http.StatusBadRequest, r.Status)

	other := b.Token(authClaims("org-2"))
	require.Equal(t, http.StatusNotFound, b.Do("GET", "/v1/connectors/"+id, other, nil).Status)
	require.Equal(t, http.StatusNotFound, b.Do("DELETE", "/v1/connectors/"+id, other, nil).Status)

	require.Equal(t, http.StatusNoContent, b.Do("DELETE", "/v1/connectors/"+id, b.Owner(), nil).Status)
	require.Equal(t, http.StatusNotFound, b.Do("GET", "/v1/connectors/"+id, b.Owner(), nil).Status)
}

func authClaims(org string) auth.Claims {
	return auth.Claims{Org: org, Kind: auth.KindUser, Role: auth.RoleOwner}
}

func TestConnector_ToolErrorFailsWithoutRetry(t *testing.T) {
	t.Parallel()
	srv := newMCPServer(t)
	var calls atomic.Int32
	srv.sdk.AddTool(&mcpsdk.Tool{Name: "explode", Description: "Always fails.", InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: &mcpsdk.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
			calls.Add(1)
			return &mcpsdk.CallToolResult{IsError: true, Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: "the index is corrupt"}}}, nil
		})
	b := apptest.Start(t, nil)
	_, source := createConnector(t, b, srv, nil)

	r := invokeTool(b, source, "explode", map[string]any{})
	require.Equal(t, http.StatusBadGateway, r.Status, string(r.Raw))
	inv := r.Body["invocation"].(map[string]any)
	require.Equal(t, "failed", inv["status"])
	require.Contains(t, inv["error"], "the index is corrupt")
	waitJobState(t, b, inv["id"].(string), "cancelled")
	require.Equal(t, int32(1), calls.Load(), "a tool error is not retried")
}

// TestConnector_SecretParamsReachTheServer checks a tool argument with a
// secret's name is executed as given while only its redacted form is
// stored and shown, and that the sealed exact copy is gone once the
// invocation is finished.
func TestConnector_SecretParamsReachTheServer(t *testing.T) {
	t.Parallel()
	const password = "pw-correct-horse-battery-7"
	srv := newMCPServer(t)
	srv.addTool("login", "Log in.", `{"type":"object","properties":{"user":{"type":"string"},"password":{"type":"string"}},"required":["user","password"]}`, nil)
	b := apptest.Start(t, nil)
	_, source := createConnector(t, b, srv, nil)

	sealed := func(id string) bool {
		return countRows(t, b, `SELECT count(*) FROM action_invocations WHERE id = $1 AND params_sealed IS NOT NULL`, id) == 1
	}
	noPlaintext := func() {
		t.Helper()
		require.Zero(t, countRows(t, b, `SELECT count(*) FROM action_invocations i WHERE row_to_json(i)::text LIKE '%'||$1||'%'`, password))
		require.Zero(t, countRows(t, b, `SELECT count(*) FROM river_job j WHERE row_to_json(j)::text LIKE '%'||$1||'%'`, password))
	}

	r := invokeTool(b, source, "login", map[string]any{"user": "ada", "password": password})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	require.NotContains(t, string(r.Raw), password)
	id := r.Body["invocation_id"].(string)
	require.Equal(t, map[string]any{"user": "ada", "password": "[REDACTED]"}, b.Invocation(id)["params"])
	require.True(t, sealed(id), "the exact params wait sealed for the worker")
	noPlaintext()

	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/invocations/"+id+"/approve", b.Owner(), map[string]string{"mode": "once"}).Status)
	b.WaitStatus(id, invocation.StatusCompleted, 10*time.Second)
	calls := srv.toolCalls()
	require.Len(t, calls, 1)
	require.JSONEq(t, `{"user":"ada","password":"`+password+`"}`, string(calls[0].Arguments))
	require.False(t, sealed(id), "a finished invocation keeps no sealed params")

	// A denied one drops its sealed copy too.
	r = invokeTool(b, source, "login", map[string]any{"user": "bob", "password": password})
	denied := r.Body["invocation_id"].(string)
	require.True(t, sealed(denied))
	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/invocations/"+denied+"/deny", b.Owner(), nil).Status)
	require.False(t, sealed(denied))

	// Params without a secret are not sealed.
	r = invokeTool(b, source, "search", map[string]any{"query": "plain"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.False(t, sealed(r.Body["invocation"].(map[string]any)["id"].(string)))
	noPlaintext()
	require.Len(t, srv.toolCalls(), 2)
}

// TestConnector_SecretFromTheStoreWithABroker: when provider tokens come
// from a broker, a connector's secret, which only outboxd holds, still
// comes from outboxd's store (its catalog entry says so) and the broker is
// never asked for it.
func TestConnector_SecretFromTheStoreWithABroker(t *testing.T) {
	t.Parallel()
	srv := newMCPServer(t)
	broker := newFakeBroker(t, "broker-token", "", "")
	b := apptest.Start(t, &apptest.Options{BrokerURL: broker.server.URL})

	_, source := createConnector(t, b, srv, map[string]any{"type": "bearer", "secret": connSecret})
	r := invokeTool(b, source, "search", map[string]any{"query": "broker"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, "completed", r.Body["invocation"].(map[string]any)["status"], string(r.Raw))
	var sawSecret bool
	for _, h := range srv.seenHeaders() {
		sawSecret = sawSecret || h.Get("Authorization") == "Bearer "+connSecret
	}
	require.True(t, sawSecret, "the call carried the stored secret")
	for _, call := range broker.recorded() {
		require.NotEqual(t, source, call.Integration, "the broker was asked for the connector's secret")
	}
}

// TestConnector_ReviewIsForTheDefinitionSeen: a review names the hash of
// the definition the admin saw; a server that changes the tool between
// the listing and the review has the whole review refused, with nothing
// stored, and the admin's allow never attaches to a definition nobody saw.
func TestConnector_ReviewIsForTheDefinitionSeen(t *testing.T) {
	t.Parallel()
	srv := newMCPServer(t)
	b := apptest.Start(t, &apptest.Options{ConnectorCacheTTL: time.Millisecond})
	id, source := createConnector(t, b, srv, nil)
	tools := func() map[string]map[string]any {
		t.Helper()
		r := b.Do("GET", "/v1/connectors/"+id+"/tools", b.Owner(), nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		out := map[string]map[string]any{}
		for _, tl := range r.Body["tools"].([]any) {
			out[tl.(map[string]any)["name"].(string)] = tl.(map[string]any)
		}
		return out
	}
	review := func(body any) *apptest.Response {
		return b.Do("PUT", "/v1/connectors/"+id+"/tools", b.Owner(), body)
	}
	noReviews := func() {
		t.Helper()
		for name, tl := range tools() {
			require.Nil(t, tl["reviewed_mode"], "%s: nothing was stored", name)
		}
	}

	seen := tools()
	// The server changes create_note after the admin saw it; the tool-list
	// cache (1 ms) is waited out.
	srv.addTool("create_note", "Create a note.",
		`{"type":"object","properties":{"title":{"type":"string"},"share_with":{"type":"string"}},"required":["title"]}`, nil)
	time.Sleep(2 * time.Millisecond)

	r := review(map[string]any{
		"create_note": map[string]string{"mode": "allow", "hash": seen["create_note"]["hash"].(string)},
		"search":      map[string]string{"mode": "allow", "hash": seen["search"]["hash"].(string)},
	})
	require.Equal(t, http.StatusConflict, r.Status, string(r.Raw))
	e := r.Body["error"].(map[string]any)
	require.Equal(t, "tool_changed", e["code"])
	require.Contains(t, e["message"], "create_note")
	require.Equal(t, map[string]any{"tools": []any{"create_note"}}, e["details"])
	noReviews()
	r = invokeTool(b, source, "create_note", map[string]any{"title": "unreviewed", "share_with": "everyone"})
	require.Equal(t, http.StatusAccepted, r.Status, "the changed tool was not allowed: %s", r.Raw)

	// Bad reviews are 400s that store nothing either.
	now := tools()
	hash := now["create_note"]["hash"].(string)
	for body, code := range map[string]string{
		`{"create_note": {"mode": "allow", "hash": 7}}`:                      "invalid_json",
		`{"create_note": {"mode": "allow", "hash": "` + hash + `", "x": 1}}`: "invalid_json",
		`{"create_note": {"mode": "allow"}}`:                                 "invalid_json",
		`{"create_note": {"mode": "allow", "hash": ""}}`:                     "invalid_json",
		`{"create_note": {"hash": "` + hash + `"}}`:                          "invalid_json",
		`{"create_note": 5}`:                                                 "invalid_json",
		`{"create_note": {"mode": "always", "hash": "` + hash + `"}}`:        "invalid_request",
		`{"nope": {"mode": "allow", "hash": "` + hash + `"}}`:                "invalid_request",
	} {
		r = review(json.RawMessage(body))
		require.Equal(t, http.StatusBadRequest, r.Status, "%s: %s", body, r.Raw)
		require.Equal(t, code, r.Body["error"].(map[string]any)["code"], "%s: %s", body, r.Raw)
	}
	noReviews()

	// With the hash of the definition it now has, the review is stored.
	r = review(map[string]any{"create_note": map[string]string{"mode": "allow", "hash": hash}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, "allow", tools()["create_note"]["reviewed_mode"])
	require.Equal(t, hash, tools()["create_note"]["reviewed_hash"])
	r = invokeTool(b, source, "create_note", map[string]any{"title": "reviewed", "share_with": "team"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))

	// A mode alone is still accepted, for the tool's current definition.
	r = review(map[string]string{"search": "deny"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, "deny", tools()["search"]["reviewed_mode"])
	require.Equal(t, tools()["search"]["hash"], tools()["search"]["reviewed_hash"])
}

// TestConnector_ModeAloneReviewsTheServersDefinitionNow: a review giving a
// mode alone is for the tool's current definition, which is the server's
// now, not the tool list cached (for five minutes) when the admin last
// listed: the server changed the tool since, and the review stores the
// new definition's hash. Before, it stored the cached one's, and the tool
// showed drifted once the cache expired, though just reviewed.
func TestConnector_ModeAloneReviewsTheServersDefinitionNow(t *testing.T) {
	t.Parallel()
	srv := newMCPServer(t)
	b := apptest.Start(t, nil) // the default cache TTL: the listing below is cached
	id, _ := createConnector(t, b, srv, nil)
	hashOf := func(body map[string]any, name string) (hash, reviewed any) {
		t.Helper()
		for _, tl := range body["tools"].([]any) {
			if tl := tl.(map[string]any); tl["name"] == name {
				return tl["hash"], tl["reviewed_hash"]
			}
		}
		t.Fatalf("no tool %s", name)
		return nil, nil
	}
	r := b.Do("GET", "/v1/connectors/"+id+"/tools", b.Owner(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	seen, _ := hashOf(r.Body, "create_note")

	srv.addTool("create_note", "Create a note.",
		`{"type":"object","properties":{"title":{"type":"string"},"share_with":{"type":"string"}},"required":["title"]}`, nil)
	r = b.Do("PUT", "/v1/connectors/"+id+"/tools", b.Owner(), map[string]string{"create_note": "allow"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	now, reviewed := hashOf(r.Body, "create_note")
	require.NotEqual(t, seen, now, "the review listed the server's tools anew")
	require.Equal(t, now, reviewed)
	r = b.Do("GET", "/v1/connectors/"+id+"/tools", b.Owner(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	hash, reviewed := hashOf(r.Body, "create_note")
	require.Equal(t, now, hash)
	require.Equal(t, now, reviewed)
}
