package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/google/uuid"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/mcp"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testSecret is the connector secret tests authenticate with. Servers echo
// it back in errors in some tests to check it is scrubbed.
const testSecret = "s3cr3t-connector-token-0123"

// recordedRequest is what a test server saw of one HTTP request.
type recordedRequest struct {
	HTTPMethod string
	// RPCMethod is the JSON-RPC method of a POST body, "" for responses and
	// for other HTTP methods.
	RPCMethod string
	Header    http.Header
}

// testServer is a real MCP server from the go-sdk on a loopback listener,
// recording every HTTP request it gets.
type testServer struct {
	server *mcpsdk.Server
	http   *httptest.Server
	URL    string

	mu       sync.Mutex
	requests []recordedRequest
}

type serverOptions struct {
	// stateless runs the handler without sessions.
	stateless bool
	// pageSize sets the server's tools/list page size.
	pageSize int
	// wrap, when set, wraps the MCP handler (after recording).
	wrap func(http.Handler) http.Handler
}

// newTestServer starts an MCP server. Tools are added with addTool.
func newTestServer(t *testing.T, opts serverOptions) *testServer {
	t.Helper()

	ts := &testServer{
		server: mcpsdk.NewServer(&mcpsdk.Implementation{Name: "test-server", Version: "v0.0.1"}, &mcpsdk.ServerOptions{PageSize: opts.pageSize}),
	}
	var handler http.Handler = mcpsdk.NewStreamableHTTPHandler(
		func(*http.Request) *mcpsdk.Server { return ts.server },
		&mcpsdk.StreamableHTTPOptions{Stateless: opts.stateless},
	)
	if opts.wrap != nil {
		handler = opts.wrap(handler)
	}
	ts.http = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts.record(r)
		handler.ServeHTTP(w, r)
	}))
	ts.URL = ts.http.URL
	t.Cleanup(func() {
		ts.http.Close()
		// Sessions a client lost (or a test dropped) are not ended by a
		// DELETE; end them so their goroutines stop.
		for ss := range ts.server.Sessions() {
			_ = ss.Close()
		}
	})
	return ts
}

func (ts *testServer) record(r *http.Request) {
	rec := recordedRequest{HTTPMethod: r.Method, Header: r.Header.Clone()}
	if r.Method == http.MethodPost && r.Body != nil {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec.RPCMethod = rpcMethod(body)
	}
	ts.mu.Lock()
	ts.requests = append(ts.requests, rec)
	ts.mu.Unlock()
}

// rpcMethod returns the JSON-RPC method of a request body, if any.
func rpcMethod(body []byte) string {
	var msg struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(body, &msg)
	return msg.Method
}

func (ts *testServer) recorded() []recordedRequest {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]recordedRequest(nil), ts.requests...)
}

// count returns how many POSTs carried the JSON-RPC method.
func (ts *testServer) count(rpcMethod string) int {
	n := 0
	for _, r := range ts.recorded() {
		if r.RPCMethod == rpcMethod {
			n++
		}
	}
	return n
}

// addTool adds (or replaces) a tool with a raw input schema.
func (ts *testServer) addTool(name, description, schema string, ann *mcpsdk.ToolAnnotations, h mcpsdk.ToolHandler) {
	if h == nil {
		h = textResult("ok")
	}
	ts.server.AddTool(&mcpsdk.Tool{
		Name:        name,
		Description: description,
		InputSchema: json.RawMessage(schema),
		Annotations: ann,
	}, h)
}

// textResult is a handler answering with one text content.
func textResult(text string) mcpsdk.ToolHandler {
	return func(_ context.Context, _ *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
		return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: text}}}, nil
	}
}

// connector returns a connector pointing at ts without auth.
func (ts *testServer) connector() *mcp.Connector {
	return &mcp.Connector{
		ID:   uuid.New(),
		Name: "test",
		URL:  ts.URL,
		Auth: mcp.Auth{Type: mcp.AuthNone},
	}
}

// newClient returns a Client allowed to reach loopback test servers.
func newClient(t *testing.T, cfg *mcp.Config) *mcp.Client {
	t.Helper()
	if cfg == nil {
		cfg = &mcp.Config{}
	}
	cfg.AllowPrivateNetworks = true
	client, err := mcp.New(cfg)
	require.NoError(t, err)
	t.Cleanup(client.CloseIdleConnections)
	return client
}

// requireExecError asserts err is a classified failure free of the secret
// and returns its classification.
func requireExecError(t *testing.T, err error) *executors.Error {
	t.Helper()
	require.Error(t, err)
	require.NotContains(t, err.Error(), testSecret)

	var execErr *executors.Error
	require.ErrorAs(t, err, &execErr)
	require.NotContains(t, execErr.Code, testSecret)
	require.NotContains(t, execErr.Message, testSecret)
	return execErr
}

func boolPtr(b bool) *bool { return &b }
