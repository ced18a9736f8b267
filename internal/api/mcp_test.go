package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/mcpfront"
	"github.com/outboxd/outboxd/internal/platform/httpserver"
	"github.com/outboxd/outboxd/outbox"
)

// bearer adds a bearer token to every request of an MCP client.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// mcpSession connects the official Go SDK's client to the bundle's /mcp
// with token.
func mcpSession(t *testing.T, b *apptest.Bundle, token string) *mcp.ClientSession {
	t.Helper()
	return mcpSessionWith(t, b, token, nil)
}

// mcpSessionWith is mcpSession with client options.
func mcpSessionWith(t *testing.T, b *apptest.Bundle, token string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return mcpSessionAt(t, b, token, "", opts)
}

// protocolVersions are the versions the front door serves: 2025-11-25
// with a session, 2026-07-28 without.
var protocolVersions = []string{"2025-11-25", "2026-07-28"}

// mcpSessionAt is mcpSessionWith speaking protocol version (the SDK's
// latest when empty).
func mcpSessionAt(t *testing.T, b *apptest.Bundle, token, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "outboxd-test", Version: "1"}, opts)
	session, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint:   b.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}},
	}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err)
	if version != "" {
		require.Equal(t, version, session.InitializeResult().ProtocolVersion)
	}
	t.Cleanup(func() { session.Close() })
	return session
}

// toolNames lists session's tools by name.
func toolNames(t *testing.T, session *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range session.Tools(context.Background(), nil) {
		require.NoError(t, err)
		names = append(names, tool.Name)
	}
	return names
}

// callText is the text of a tool result's only content.
func callText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	require.Len(t, res.Content, 1)
	text, ok := res.Content[0].(*mcp.TextContent)
	require.True(t, ok, "text content")
	return text.Text
}

func TestMCP_AuthenticatesAsTheSpecSays(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)

	r := b.Do("POST", "/mcp", "", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
	require.Equal(t, http.StatusUnauthorized, r.Status, string(r.Raw))
	require.Equal(t, "unauthorized", r.Body["error"].(map[string]any)["code"])
	require.Equal(t, `Bearer resource_metadata="`+b.URL+`/.well-known/oauth-protected-resource/mcp"`, r.Header.Get("WWW-Authenticate"))

	// RFC 9728 puts the metadata of <base>/mcp at the well-known address
	// with the resource's path; clients also look at the root.
	for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
		meta := b.Do("GET", path, "", nil)
		require.Equal(t, http.StatusOK, meta.Status, path)
		require.Equal(t, b.URL+"/mcp", meta.Body["resource"], path)
		require.Equal(t, []any{"header"}, meta.Body["bearer_methods_supported"], path)
	}

	bad := b.Do("POST", "/mcp", "not-a-token", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
	require.Equal(t, http.StatusUnauthorized, bad.Status)
	require.Equal(t, `Bearer resource_metadata="`+b.URL+`/.well-known/oauth-protected-resource/mcp", error="invalid_token"`, bad.Header.Get("WWW-Authenticate"),
		"a token sent and refused is invalid_token (RFC 6750)")

	for _, token := range []string{b.Owner(), b.Member()} {
		r := b.Do("POST", "/mcp", token, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
		require.Equal(t, http.StatusForbidden, r.Status, string(r.Raw))
		require.Contains(t, r.Body["error"].(map[string]any)["message"], "sandbox token")
	}
}

func TestMCP_ToolsAreTheCallersCatalog(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-mcp-list")
	b.StoreToken("linear", "lin_api_mcp_list_0123456789", "api_key")
	b.SetModes(map[string]string{"linear:list_issues": "deny"})

	tools, err := mcpSession(t, b, b.Sandbox()).ListTools(context.Background(), &mcp.ListToolsParams{})
	require.NoError(t, err)
	byName := map[string]*mcp.Tool{}
	var names []string
	for _, tl := range tools.Tools {
		byName[tl.Name] = tl
		names = append(names, tl.Name)
	}

	// The same set and order as the REST catalog, deny-mode actions left out.
	avail := b.Do("GET", "/v1/sessions/"+apptest.Session+"/actions/available", b.Sandbox(), nil)
	require.Equal(t, http.StatusOK, avail.Status)
	var want []string
	for _, a := range avail.Body["actions"].([]any) {
		a := a.(map[string]any)
		if a["mode"] != "deny" {
			want = append(want, a["source"].(string)+"."+a["action"].(string))
		}
	}
	want = append(want, "outboxd_wait") // and the tool that waits again
	require.Equal(t, want, names)
	require.NotContains(t, byName, "linear.list_issues", "a deny-mode action is not offered")
	get := byName["linear.get_issue"]
	require.NotNil(t, get, "tools: %v", names)
	require.True(t, get.Annotations.ReadOnlyHint, "an R1 read says so")
	require.Contains(t, get.Description, "Runs at once.")

	send := byName["slack.send_message"]
	require.NotNil(t, send, "tools: %v", names)
	require.Contains(t, send.Description, "A human must approve")
	require.Contains(t, send.Description, "Risk tier R2")
	schema, err := json.Marshal(send.InputSchema)
	require.NoError(t, err)
	require.Contains(t, string(schema), `"channel"`)
	require.False(t, send.Annotations.ReadOnlyHint)

	// Another organization's sandbox sees none of this one's credentials'
	// sources.
	other := b.Token(auth.Claims{Org: "org-2", Kind: auth.KindSandbox, SessionID: "s-2"})
	theirs, err := mcpSession(t, b, other).ListTools(context.Background(), &mcp.ListToolsParams{})
	require.NoError(t, err)
	for _, tl := range theirs.Tools {
		require.False(t, strings.HasPrefix(tl.Name, "slack."), "org-2 has no Slack credential: %s", tl.Name)
	}
	require.NotEmpty(t, theirs.Tools)

	// A sources claim narrows the tools as it narrows the REST catalog.
	narrow := b.Token(auth.Claims{Org: apptest.Org, Kind: auth.KindSandbox, SessionID: apptest.Session, Sources: auth.OnlySources("linear")})
	only, err := mcpSession(t, b, narrow).ListTools(context.Background(), &mcp.ListToolsParams{})
	require.NoError(t, err)
	for _, tl := range only.Tools {
		require.True(t, strings.HasPrefix(tl.Name, "linear.") || tl.Name == "outboxd_wait", tl.Name)
	}
}

func TestMCP_CallRunsThroughTheOutbox(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-mcp-call")
	b.SetModes(map[string]string{"slack:send_message": "allow"})
	session := mcpSession(t, b, b.Sandbox())
	ctx := context.Background()

	call := &mcp.CallToolParams{Name: "slack.send_message", Arguments: message, Meta: mcp.Meta{"idempotency_key": "mcp-once"}}
	res, err := session.CallTool(ctx, call)
	require.NoError(t, err)
	require.False(t, res.IsError, callText(t, res))
	require.Equal(t, true, res.StructuredContent.(map[string]any)["ok"])
	require.Contains(t, callText(t, res), `"ok":true`)

	// The same key again: the same invocation, no second post.
	again, err := session.CallTool(ctx, call)
	require.NoError(t, err)
	require.False(t, again.IsError)
	require.Len(t, b.Slack.Requests(), 1, "a retried call with its key never posts twice")

	list := b.Do("GET", "/v1/sessions/"+apptest.Session+"/actions/invocations", b.Sandbox(), nil)
	require.Equal(t, http.StatusOK, list.Status)
	invs := list.Body["invocations"].([]any)
	require.Len(t, invs, 1)
	require.Equal(t, "mcp", invs[0].(map[string]any)["origin"])

	// The same key with other arguments says so, and stores nothing.
	_, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "slack.send_message", Arguments: map[string]any{"channel": "C0123456789", "text": "other"},
		Meta: mcp.Meta{"idempotency_key": "mcp-once"}})
	var rpcErr *jsonrpc.Error
	require.True(t, errors.As(err, &rpcErr), "%v", err)
	require.Equal(t, int64(jsonrpc.CodeInvalidParams), rpcErr.Code)

	// Arguments that fail the schema and unknown tools are JSON-RPC errors
	// naming what is wrong; neither is recorded.
	_, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "slack.send_message", Arguments: map[string]any{"text": "no channel"}})
	require.True(t, errors.As(err, &rpcErr), "%v", err)
	require.Contains(t, rpcErr.Message, "arguments.channel: ")
	_, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "slack.no_such_tool", Arguments: map[string]any{}})
	require.True(t, errors.As(err, &rpcErr), "%v", err)
	require.Contains(t, rpcErr.Message, "unknown tool")
	list = b.Do("GET", "/v1/sessions/"+apptest.Session+"/actions/invocations", b.Sandbox(), nil)
	require.Len(t, list.Body["invocations"].([]any), 1)

	// A deny-mode action called anyway is refused as a tool error.
	b.SetModes(map[string]string{"slack:send_message": "deny"})
	denied, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "slack.send_message", Arguments: message})
	require.NoError(t, err)
	require.True(t, denied.IsError)
	require.Contains(t, callText(t, denied), "action_denied")
	require.Len(t, b.Slack.Requests(), 1)

	metrics := string(b.Do("GET", "/metrics", "", nil).Raw)
	for _, line := range []string{
		`outboxd_mcp_calls_total{outcome="completed"} 2`,
		`outboxd_mcp_calls_total{outcome="invalid"} 3`,
		`outboxd_mcp_calls_total{outcome="denied"} 1`,
	} {
		require.Contains(t, metrics, line)
	}
}

func TestMCP_CallWaitsForApproval(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-mcp-approve")
	progress := make(chan string, 16)
	session := mcpSessionWith(t, b, b.Sandbox(), &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			progress <- r.Params.Message
		},
	})

	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		call := &mcp.CallToolParams{Name: "slack.send_message", Arguments: message}
		call.SetProgressToken("approval-1")
		res, err := session.CallTool(context.Background(), call)
		done <- answer{res, err}
	}()

	// The waiting call says what it waits for.
	select {
	case msg := <-progress:
		require.Contains(t, msg, "waiting for a human to approve it")
	case <-time.After(15 * time.Second):
		t.Fatal("no progress notification while the call waits")
	}

	// The call waits; a human approves it over REST.
	var id string
	require.Eventually(t, func() bool {
		list := b.Do("GET", "/v1/invocations?status=pending", b.Owner(), nil)
		invs, _ := list.Body["invocations"].([]any)
		if len(invs) != 1 {
			return false
		}
		id = invs[0].(map[string]any)["id"].(string)
		return true
	}, 15*time.Second, 20*time.Millisecond)
	require.Empty(t, b.Slack.Requests(), "nothing runs before the approval")
	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/invocations/"+id+"/approve", b.Owner(), map[string]string{"mode": "once"}).Status)

	select {
	case a := <-done:
		require.NoError(t, a.err)
		require.False(t, a.res.IsError, callText(t, a.res))
		require.Equal(t, true, a.res.StructuredContent.(map[string]any)["ok"])
	case <-time.After(30 * time.Second):
		t.Fatal("the call did not return after the approval")
	}
	require.Len(t, b.Slack.Requests(), 1)
	require.Contains(t, string(b.Do("GET", "/metrics", "", nil).Raw), "outboxd_mcp_wait_seconds_count 1")
}

// forwarded is what a proxy in front of outboxd adds to each request.
type forwarded struct{ next http.RoundTripper }

func (f forwarded) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Forwarded-Proto", "https")
	r.Header.Set("X-Forwarded-Host", "outboxd.example.com")
	return f.next.RoundTrip(r)
}

// Behind a proxy trusted with http.trust_forwarded_for, what a client is
// told to come back to is the address it reached, not outboxd's own.
func TestMCP_BehindATrustedProxy(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{Outbox: outbox.Config{SyncWait: 200 * time.Millisecond},
		HTTP: &httpserver.Config{ReadTimeout: time.Minute, WriteTimeout: time.Minute, TrustForwardedFor: true}})
	const origin = "https://outboxd.example.com"

	proxied := []string{"X-Forwarded-Proto", "https", "X-Forwarded-Host", "outboxd.example.com"}
	r := b.Do("POST", "/mcp", "", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, proxied...)
	require.Equal(t, http.StatusUnauthorized, r.Status)
	require.Equal(t, `Bearer resource_metadata="`+origin+`/.well-known/oauth-protected-resource/mcp"`, r.Header.Get("WWW-Authenticate"))
	require.Equal(t, origin+"/mcp", b.Do("GET", "/.well-known/oauth-protected-resource/mcp", "", nil, proxied...).Body["resource"])

	b.StoreSlackToken("xoxb-mcp-proxy")
	for _, version := range protocolVersions {
		client := mcp.NewClient(&mcp.Implementation{Name: "outboxd-test", Version: "1"}, nil)
		session, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
			Endpoint:   b.URL + "/mcp",
			HTTPClient: &http.Client{Transport: bearer{b.Sandbox(), forwarded{http.DefaultTransport}}},
		}, &mcp.ClientSessionOptions{ProtocolVersion: version})
		require.NoError(t, err)
		res, err := session.CallTool(context.Background(), &mcp.CallToolParams{Name: "slack.send_message", Arguments: message})
		require.NoError(t, err)
		pending := res.StructuredContent.(map[string]any)
		require.Equal(t, "pending", pending["status"], version)
		require.Equal(t, origin+"/console/#/invocations/"+pending["invocation_id"].(string), pending["console_url"], version)
		require.NoError(t, session.Close())
	}
}

func TestMCP_PendingPastTheWaitThenWaitAgain(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{Outbox: outbox.Config{SyncWait: 300 * time.Millisecond}})
	b.StoreSlackToken("xoxb-mcp-wait")
	session := mcpSession(t, b, b.Sandbox())
	ctx := context.Background()

	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "slack.send_message", Arguments: message})
	require.NoError(t, err)
	require.False(t, res.IsError, callText(t, res))
	pending := res.StructuredContent.(map[string]any)
	require.Equal(t, "pending", pending["status"])
	require.NotEmpty(t, pending["expires_at"])
	id := pending["invocation_id"].(string)
	require.Equal(t, b.URL+"/console/#/invocations/"+id, pending["console_url"], "where a human decides")

	tools, err := session.ListTools(ctx, &mcp.ListToolsParams{})
	require.NoError(t, err)
	require.Equal(t, "outboxd_wait", tools.Tools[len(tools.Tools)-1].Name)

	// Still undecided: waiting again changes nothing and says so.
	res, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "outboxd_wait", Arguments: map[string]any{"invocation_id": id}})
	require.NoError(t, err)
	require.Equal(t, "pending", res.StructuredContent.(map[string]any)["status"])
	require.Equal(t, pending["console_url"], res.StructuredContent.(map[string]any)["console_url"])
	require.Empty(t, b.Slack.Requests())

	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/invocations/"+id+"/approve", b.Owner(), map[string]string{"mode": "once"}).Status)
	require.Eventually(t, func() bool {
		res, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "outboxd_wait", Arguments: map[string]any{"invocation_id": id}})
		require.NoError(t, err)
		return res.StructuredContent != nil && res.StructuredContent.(map[string]any)["ok"] == true
	}, 15*time.Second, 50*time.Millisecond)
	require.Len(t, b.Slack.Requests(), 1, "waiting never runs the action again")

	// Another session's invocation is not found.
	other := b.Token(auth.Claims{Org: apptest.Org, Kind: auth.KindSandbox, SessionID: "another-session"})
	_, err = mcpSession(t, b, other).CallTool(ctx, &mcp.CallToolParams{Name: "outboxd_wait", Arguments: map[string]any{"invocation_id": id}})
	var rpcErr *jsonrpc.Error
	require.True(t, errors.As(err, &rpcErr), "%v", err)
}

func TestMCP_GuidesAreResources(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-mcp-guides")
	session := mcpSession(t, b, b.Sandbox())
	ctx := context.Background()

	list, err := session.ListResources(ctx, &mcp.ListResourcesParams{})
	require.NoError(t, err)
	uris := map[string]bool{}
	for _, r := range list.Resources {
		uris[r.URI] = true
	}
	require.True(t, uris["outboxd://guide"], "%v", uris)
	require.True(t, uris["outboxd://guides/slack"], "%v", uris)
	require.False(t, uris["outboxd://guides/linear"], "linear has no credential here: %v", uris)

	guide, err := session.ReadResource(ctx, &mcp.ReadResourceParams{URI: "outboxd://guides/slack"})
	require.NoError(t, err)
	rest := b.Do("GET", "/v1/sessions/"+apptest.Session+"/actions/guide/slack", b.Sandbox(), nil)
	require.Equal(t, http.StatusOK, rest.Status)
	require.Equal(t, string(rest.Raw), guide.Contents[0].Text, "the same guide as over REST")

	boot, err := session.ReadResource(ctx, &mcp.ReadResourceParams{URI: "outboxd://guide"})
	require.NoError(t, err)
	require.Contains(t, boot.Contents[0].Text, "# Actions")

	_, err = session.ReadResource(ctx, &mcp.ReadResourceParams{URI: "outboxd://guides/linear"})
	require.Error(t, err, "a source the caller may not use has no guide")
}

func TestMCP_ServiceTokenCallsBecomeEnvelopes(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-mcp-service")
	b.SetModes(map[string]string{"slack:send_message": "allow"})
	session := mcpSession(t, b, b.Service())
	ctx := context.Background()

	call := &mcp.CallToolParams{Name: "slack.send_message", Arguments: message, Meta: mcp.Meta{"idempotency_key": "nightly-report-42"}}
	res, err := session.CallTool(ctx, call)
	require.NoError(t, err)
	require.False(t, res.IsError, callText(t, res))
	require.Equal(t, true, res.StructuredContent.(map[string]any)["ok"], "the call waited for the worker")

	again, err := session.CallTool(ctx, call)
	require.NoError(t, err)
	require.False(t, again.IsError)
	require.Len(t, b.Slack.Requests(), 1, "the key is the envelope's external id: one post")

	list := b.Do("GET", "/v1/invocations?origin=envelope", b.Owner(), nil)
	require.Equal(t, http.StatusOK, list.Status, string(list.Raw))
	invs := list.Body["invocations"].([]any)
	require.Len(t, invs, 1)
	require.Equal(t, "nightly-report-42", invs[0].(map[string]any)["external_id"])
}

// postMCP sends one raw Streamable HTTP request to /mcp with a new sandbox
// token, in the 2025-11-25 session session when it is not empty.
func postMCP(t *testing.T, b *apptest.Bundle, body, version, session string) (int, string, http.Header) {
	t.Helper()
	return postMCPAs(t, b, b.Sandbox(), body, version, session)
}

// postMCPAs is postMCP with token.
func postMCPAs(t *testing.T, b *apptest.Bundle, token, body, version, session string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest("POST", b.URL+"/mcp", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if version != "" {
		req.Header.Set("MCP-Protocol-Version", version)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(raw), resp.Header
}

// rawSession starts a 2025-11-25 session by hand (initialize, then
// notifications/initialized) and returns its id.
func rawSession(t *testing.T, b *apptest.Bundle) string {
	t.Helper()
	status, body, h := postMCP(t, b, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, "", "")
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, `"protocolVersion":"2025-11-25"`)
	session := h.Get("Mcp-Session-Id")
	require.NotEmpty(t, session, "a 2025-11-25 client gets a session")
	status, body, _ = postMCP(t, b, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "2025-11-25", session)
	require.Equal(t, http.StatusAccepted, status, body)
	return session
}

// Both protocol versions are served: 2025-11-25 by hand (initialize, then
// requests with the version header) and 2026-07-28 by the SDK's client.
func TestMCP_BothProtocolVersions(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-mcp-versions")

	session := rawSession(t, b)
	status, body, _ := postMCP(t, b, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, "2025-11-25", session)
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, `"name":"slack.send_message"`)
	status, body, _ = postMCP(t, b, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, "2025-11-25", "")
	require.Equal(t, http.StatusOK, status, body)
	require.Contains(t, body, "invalid during session initialization", "a 2025-11-25 request needs its session")

	modern := mcpSession(t, b, b.Sandbox())
	require.Equal(t, "2026-07-28", modern.InitializeResult().ProtocolVersion)
}

// Bad input gets a clear 4xx and stores nothing.
func TestMCP_BadInput(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-mcp-bad")
	b.SetModes(map[string]string{"slack:send_message": "allow"})

	for name, c := range map[string]struct {
		body, version string
		status        int
		says          string
	}{
		"Malformed":      {`{not json`, "2025-11-25", http.StatusBadRequest, "malformed"},
		"Batch":          {` [{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`, "2025-11-25", http.StatusBadRequest, "batches are not served"},
		"WrongVersion":   {`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "1999-01-01", http.StatusBadRequest, "protocol version"},
		"Oversize":       {`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slack.send_message","arguments":{"channel":"C1","text":"` + strings.Repeat("a", 5<<20) + `"}}}`, "2025-11-25", http.StatusRequestEntityTooLarge, "exceeds"},
		"UnknownSession": {`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "2025-11-25", http.StatusNotFound, "session not found"},
		"ArgsNotObject":  {`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slack.send_message","arguments":[1]}}`, "2025-11-25", http.StatusOK, `"code":-32602,"message":"invalid params for slack.send_message (arguments: params must be a JSON object)"`},
		"NUL":            {`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slack.send_message","arguments":{"channel":"C1\u0000","text":"x"}}}`, "2025-11-25", http.StatusOK, `"code":-32602`},
		"KeyNUL":         {`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slack.send_message","arguments":{"channel":"C1","text":"x"},"_meta":{"idempotency_key":"k\u0000"}}}`, "2025-11-25", http.StatusOK, `"code":-32602,"message":"_meta.idempotency_key (or Idempotency-Key) contains a NUL character"`},
		"ProgressObject": {`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slack.send_message","arguments":{"channel":"C1","text":"x"},"_meta":{"progressToken":{"a":1}}}}`, "2025-11-25", http.StatusOK, `"code":-32602,"message":"_meta.progressToken must be a string or a number"`},
		"ProgressBool":   {`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"outboxd_wait","arguments":{"invocation_id":"x"},"_meta":{"progressToken":true}}}`, "2025-11-25", http.StatusOK, `"code":-32602,"message":"_meta.progressToken must be a string or a number"`},
		"KeyControl":     {`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slack.send_message","arguments":{"channel":"C1","text":"x"},"_meta":{"idempotency_key":"k\n"}}}`, "2025-11-25", http.StatusOK, `"code":-32602,"message":"_meta.idempotency_key (or Idempotency-Key) contains a control character"`},
	} {
		session := rawSession(t, b)
		if name == "UnknownSession" {
			session = "no-such-session"
		}
		status, body, h := postMCP(t, b, c.body, c.version, session)
		require.Equal(t, c.status, status, "%s: %s", name, body)
		require.Contains(t, body, c.says, name)
		if status >= 400 {
			// The SDK's refusals too are JSON-RPC errors.
			require.Equal(t, "application/json", h.Get("Content-Type"), name)
			var answer struct {
				Error struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal([]byte(body), &answer), name)
			if name == "Malformed" {
				require.Equal(t, -32700, answer.Error.Code, "a body that does not parse is a parse error")
			} else {
				require.Equal(t, -32600, answer.Error.Code, name)
			}
			require.NotEmpty(t, answer.Error.Message, name)
		}
	}
	list := b.Do("GET", "/v1/invocations", b.Owner(), nil)
	require.Equal(t, http.StatusOK, list.Status)
	require.Empty(t, list.Body["invocations"], "bad input stores nothing")
	require.Empty(t, b.Slack.Requests())
}

// A client that cancels a waiting call withdraws its invocation: with
// 2025-11-25, by notifications/cancelled in its session, with an
// idempotency key or without; with 2026-07-28, by ending the request of a
// call without a key (TestMCP_KeyedCallOutlivesItsEndedRequest: with one).
// The call is counted as cancelled.
func TestMCP_CancelledCallWithdrawsItsInvocation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ version, key string }{{"2025-11-25", ""}, {"2025-11-25", "cancel-1"}, {"2026-07-28", ""}} {
		t.Run(strings.TrimSuffix(tc.version+" "+tc.key, " "), func(t *testing.T) {
			t.Parallel()
			testCancel(t, tc.version, tc.key)
		})
	}
}

func testCancel(t *testing.T, version, key string) {
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-mcp-cancel")
	session := mcpSessionAt(t, b, b.Sandbox(), version, nil)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		p := &mcp.CallToolParams{Name: "slack.send_message", Arguments: message}
		if key != "" {
			p.Meta = mcp.Meta{"idempotency_key": key}
		}
		_, err := session.CallTool(ctx, p)
		done <- err
	}()
	var id string
	require.Eventually(t, func() bool {
		invs, _ := b.Do("GET", "/v1/invocations?status=pending", b.Owner(), nil).Body["invocations"].([]any)
		if len(invs) == 1 {
			id = invs[0].(map[string]any)["id"].(string)
		}
		return id != ""
	}, 15*time.Second, 20*time.Millisecond)
	cancel()
	require.Error(t, <-done)

	inv := b.WaitStatus(id, "cancelled", 15*time.Second)
	require.Equal(t, "cancelled", inv["status"])
	require.Equal(t, http.StatusConflict, b.Do("POST", "/v1/invocations/"+id+"/approve", b.Owner(), map[string]string{"mode": "once"}).Status)
	require.Empty(t, b.Slack.Requests())
	require.Eventually(t, func() bool { return mcpCalls(t, b, "cancelled") == 1 }, 15*time.Second, 20*time.Millisecond)
	require.Zero(t, mcpCalls(t, b, "invalid"), "a cancelled call is not an invalid one")
}

// A client is told when its tool list changes (a mode override, a
// credential stored), with 2025-11-25 on its session's stream and with
// 2026-07-28 on its subscriptions/listen request; another organization's
// clients hear nothing of it.
func TestMCP_ToolListChanged(t *testing.T) {
	t.Parallel()
	for _, version := range protocolVersions {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			testListChanged(t, version)
		})
	}
}

func testListChanged(t *testing.T, version string) {
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-mcp-changes")
	listening := func(token string) (*mcp.ClientSession, chan struct{}) {
		changed := make(chan struct{}, 10)
		session := mcpSessionAt(t, b, token, version, &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
		})
		return session, changed
	}
	session, changed := listening(b.Sandbox())
	other, otherChanged := listening(b.Token(auth.Claims{Org: "org-other", Kind: auth.KindSandbox, SessionID: "s-other"}))
	require.Contains(t, toolNames(t, session), "slack.send_message")
	require.NotContains(t, toolNames(t, session), "linear.create_issue")
	otherTools := toolNames(t, other)
	heard := func(ch chan struct{}) bool {
		select {
		case <-ch:
			return true
		case <-time.After(15 * time.Second):
			return false
		}
	}

	b.SetModes(map[string]string{"slack:send_message": "deny"})
	require.True(t, heard(changed), "no tools/list_changed after a mode override")
	require.NotContains(t, toolNames(t, session), "slack.send_message", "a deny-mode action is no tool")

	b.StoreToken("linear", "lin-api-key", "")
	require.True(t, heard(changed), "no tools/list_changed after a credential was stored")
	require.Contains(t, toolNames(t, session), "linear.create_issue")

	require.Equal(t, otherTools, toolNames(t, other))
	select {
	case <-otherChanged:
		t.Fatal("another organization's client was told its tools changed")
	default:
	}
	metrics := string(b.Do("GET", "/metrics", "", nil).Raw)
	require.Contains(t, metrics, "outboxd_mcp_sessions 2")
	require.Contains(t, metrics, "outboxd_mcp_list_changed_total 2")
}

// A connector's server changing its tools changes no table: the front
// door notices at its recheck and tells the clients whose list changed.
func TestMCP_ToolListChangedWhenAConnectorsServerChanges(t *testing.T) {
	t.Parallel()
	srv := newMCPServer(t)
	b := apptest.Start(t, &apptest.Options{ConnectorCacheTTL: 50 * time.Millisecond, MCP: mcpfront.Config{Recheck: 100 * time.Millisecond}})
	_, source := createConnector(t, b, srv, nil)
	changed := make(chan struct{}, 10)
	session := mcpSessionAt(t, b, b.Sandbox(), "2025-11-25", &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	fresh := strings.ReplaceAll(source, ":", "_") + ".fresh"
	require.NotContains(t, toolNames(t, session), fresh)

	srv.addTool("fresh", "A tool the server added.", `{"type":"object"}`, &mcp.ToolAnnotations{ReadOnlyHint: true})
	select {
	case <-changed:
	case <-time.After(15 * time.Second):
		t.Fatal("no tools/list_changed after the connector's server added a tool")
	}
	require.Contains(t, toolNames(t, session), fresh)
}

// A graceful shutdown ends the clients' open streams (a 2025-11-25
// session's, a 2026-07-28 subscriptions/listen request) instead of waiting
// for them until its timeout.
func TestMCP_ShutdownEndsOpenStreams(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{ShutdownTimeout: 10 * time.Minute})
	for _, version := range protocolVersions {
		session := mcpSessionAt(t, b, b.Sandbox(), version, &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {},
		})
		toolNames(t, session)
	}
	require.Contains(t, string(b.Do("GET", "/metrics", "", nil).Raw), "outboxd_mcp_sessions 2")
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		b.Stop()
	}()
	select {
	case <-stopped:
	case <-time.After(time.Minute):
		t.Fatal("the shutdown waits for the MCP clients' streams")
	}
}

// A shutdown does not wait out a call waiting for a human, nor lose its
// answer: each call answers at once with its invocation still pending
// (which another process then waits on with outboxd_wait), in a session
// or without one, and the invocation is not withdrawn.
func TestMCP_ShutdownAnswersWaitingCalls(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{ShutdownTimeout: 10 * time.Minute, Outbox: outbox.Config{SyncWait: 10 * time.Minute}})
	b.StoreSlackToken("xoxb-mcp-shutdown")
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	answers := map[string]chan answer{}
	for _, version := range protocolVersions {
		session := mcpSessionAt(t, b, b.Sandbox(), version, nil)
		done := make(chan answer, 1)
		answers[version] = done
		go func() {
			res, err := session.CallTool(context.Background(), &mcp.CallToolParams{Name: "slack.send_message", Arguments: message})
			done <- answer{res, err}
		}()
	}
	var pending []any
	require.Eventually(t, func() bool {
		pending, _ = b.Do("GET", "/v1/invocations?status=pending", b.Owner(), nil).Body["invocations"].([]any)
		return len(pending) == len(protocolVersions)
	}, 15*time.Second, 20*time.Millisecond)

	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		b.Stop()
	}()
	ids := map[string]bool{}
	for version, done := range answers {
		select {
		case a := <-done:
			require.NoError(t, a.err, version)
			require.False(t, a.res.IsError, callText(t, a.res))
			got := a.res.StructuredContent.(map[string]any)
			require.Equal(t, "pending", got["status"], version)
			ids[got["invocation_id"].(string)] = true
		case <-time.After(time.Minute):
			t.Fatalf("%s: the waiting call was not answered at shutdown", version)
		}
	}
	select {
	case <-stopped:
	case <-time.After(time.Minute):
		t.Fatal("the shutdown waits for the waiting calls")
	}
	for _, inv := range pending {
		id := inv.(map[string]any)["id"].(string)
		require.True(t, ids[id], "the answers name the pending invocations")
		var status string
		require.NoError(t, b.Pool.QueryRow(context.Background(), "SELECT status FROM action_invocations WHERE id = $1", id).Scan(&status))
		require.Equal(t, "pending", status, "not withdrawn")
	}
	require.Empty(t, b.Slack.Requests())
}

// A connector's tools are tools too: their name maps back to the
// connector through the caller's catalog, and the call reaches the
// connector's MCP server.
func TestMCP_ConnectorToolsAreCalledThroughTheCatalog(t *testing.T) {
	t.Parallel()
	srv := newMCPServer(t)
	// A tool with an outputSchema: its structured content reaches the
	// client as the server gave it, and the SDK's client checks it against
	// the schema outboxd lists.
	srv.sdk.AddTool(&mcp.Tool{Name: "count", Description: "Count notes.", InputSchema: json.RawMessage(`{"type":"object"}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"count":{"type":"integer"}},"required":["count"]}`),
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "3 notes"}}, StructuredContent: map[string]any{"count": 3}}, nil
		})
	b := apptest.Start(t, nil)
	_, source := createConnector(t, b, srv, nil)
	name := strings.ReplaceAll(source, ":", "_") + ".search"

	session := mcpSession(t, b, b.Sandbox())
	tools, err := session.ListTools(context.Background(), &mcp.ListToolsParams{})
	require.NoError(t, err)
	var listed bool
	for _, tl := range tools.Tools {
		listed = listed || tl.Name == name
	}
	require.True(t, listed, "%s is listed", name)

	res, err := session.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{"query": "river"}})
	require.NoError(t, err)
	require.False(t, res.IsError, callText(t, res))
	require.Equal(t, "search done", callText(t, res), "a connector's content as its server gave it")
	require.Len(t, srv.toolCalls(), 1)

	count := strings.ReplaceAll(source, ":", "_") + ".count"
	var schema map[string]any
	for _, tl := range tools.Tools {
		if tl.Name == count {
			raw, err := json.Marshal(tl.OutputSchema)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(raw, &schema))
		}
	}
	require.Equal(t, []any{"count"}, schema["required"], "the tool's outputSchema is listed")
	res, err = session.CallTool(context.Background(), &mcp.CallToolParams{Name: count})
	require.NoError(t, err)
	require.False(t, res.IsError, callText(t, res))
	require.Equal(t, "3 notes", callText(t, res))
	require.Equal(t, map[string]any{"count": float64(3)}, res.StructuredContent)
}

// A 2025-11-25 session's stream ends once its token is revoked, as an
// event stream does.
func TestMCP_RevokedTokensStreamEnds(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	session := rawSession(t, b)
	// One token, issued before the revocation: a token issued after it is
	// not revoked, and a busy machine may take more than the second of
	// the revocation's cut-off to send the next request.
	token := b.Sandbox()
	resp := openSessionStream(t, context.Background(), b, token, session)
	defer resp.Body.Close()
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		_, _ = io.Copy(io.Discard, resp.Body)
	}()

	r := b.Do("POST", "/v1/revocations", b.Owner(), map[string]string{"session_id": apptest.Session})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	select {
	case <-ended:
	case <-time.After(time.Minute):
		t.Fatal("the revoked token's MCP stream stays open")
	}
	// Every path refuses it within seconds: the stream ended as the
	// revocation was heard, a request may be answered by a verifier whose
	// list refreshes a moment later.
	require.Eventually(t, func() bool {
		status, _, _ := postMCPAs(t, b, token, `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`, "2025-11-25", session)
		return status == http.StatusUnauthorized
	}, 10*time.Second, 50*time.Millisecond, "the revoked token is still accepted")
}

// A 2025-11-25 session's stream lasts no longer than its token (and the
// leeway a reconnect would still be let in with), as an event stream.
func TestMCP_StreamEndsWhenTheTokenExpires(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{Auth: auth.Config{Leeway: time.Second}})
	session := rawSession(t, b)
	short, err := auth.Mint(b.Secret, auth.Claims{Org: apptest.Org, Kind: auth.KindSandbox, SessionID: apptest.Session,
		RegisteredClaims: jwt.RegisteredClaims{Subject: string(auth.KindSandbox) + "-" + apptest.Session}}, 2*time.Second)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp := openSessionStream(t, ctx, b, short, session)
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	require.NoError(t, err, "the stream outlived its token")
}

// openSessionStream opens a 2025-11-25 session's stream (GET /mcp) with
// token; it lasts as long as ctx, unless the server ends it.
func openSessionStream(t *testing.T, ctx context.Context, b *apptest.Bundle, token, session string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", b.URL+"/mcp", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return resp
}

// A 2026-07-28 client's subscriptions/listen request, open as long as it
// listens, ends when its token expires or is revoked, as a 2025-11-25
// session's stream does.
func TestMCP_ListenEndsWithItsToken(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{Auth: auth.Config{Leeway: time.Second}})
	listening := func() bool {
		return strings.Contains(string(b.Do("GET", "/metrics", "", nil).Raw), "outboxd_mcp_sessions 1")
	}
	listen := func(token string) {
		session := mcpSessionAt(t, b, token, "2026-07-28", &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {},
		})
		toolNames(t, session)
		require.Eventually(t, listening, 10*time.Second, 20*time.Millisecond, "the client listens")
	}

	short, err := auth.Mint(b.Secret, auth.Claims{Org: apptest.Org, Kind: auth.KindSandbox, SessionID: "s-short",
		RegisteredClaims: jwt.RegisteredClaims{Subject: "sandbox-short"}}, 3*time.Second)
	require.NoError(t, err)
	listen(short)
	require.Eventually(t, func() bool { return !listening() }, 20*time.Second, 50*time.Millisecond, "the listen outlived its token")

	listen(b.Token(auth.Claims{Kind: auth.KindSandbox, SessionID: "s-revoked"}))
	r := b.Do("POST", "/v1/revocations", b.Owner(), map[string]string{"session_id": "s-revoked"})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	require.Eventually(t, func() bool { return !listening() }, 20*time.Second, 50*time.Millisecond, "the listen outlived its revocation")
}

// An allow-mode call still running waits sync_wait in all, as a REST
// invoke does: the invoke's own wait counts in it. Before, the front door
// waited sync_wait again after it, so a stuck call answered after twice
// sync_wait (60 s by default, the TypeScript SDK's whole request timeout).
func TestMCP_AllowedCallStillRunningWaitsSyncWaitOnce(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	b := apptest.Start(t, &apptest.Options{Outbox: outbox.Config{SyncWait: 2 * time.Second},
		SlackFunc: func(w http.ResponseWriter, r *http.Request) {
			select { // the post hangs until the test ends
			case <-release:
			case <-r.Context().Done():
			}
			w.WriteHeader(http.StatusServiceUnavailable)
		}})
	defer close(release)
	b.StoreSlackToken("xoxb-mcp-stuck")
	b.SetModes(map[string]string{"slack:send_message": "allow"})
	session := mcpSession(t, b, b.Sandbox())

	res, err := session.CallTool(context.Background(), &mcp.CallToolParams{Name: "slack.send_message", Arguments: message})
	require.NoError(t, err)
	require.False(t, res.IsError, callText(t, res))
	require.Equal(t, "executing", res.StructuredContent.(map[string]any)["status"], "the call answers while the post still runs")
	// The front door's own wait (outboxd_mcp_wait_seconds) is what was
	// left of sync_wait after the invoke's: next to nothing, not 2 s more.
	var waited float64
	for _, line := range strings.Split(string(b.Do("GET", "/metrics", "", nil).Raw), "\n") {
		if v, ok := strings.CutPrefix(line, "outboxd_mcp_wait_seconds_sum "); ok {
			waited, err = strconv.ParseFloat(v, 64)
			require.NoError(t, err)
		}
	}
	require.Less(t, waited, 1.0, "the front door waited sync_wait again after the invoke's")
}
