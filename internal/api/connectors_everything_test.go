package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/invocation"
)

// The input schemas of two of the reference server's tools, as it lists
// them (version 2026.8.31, pinned in tools/mcp-ts/package.json).
const (
	everythingEchoSchema = `{"type":"object","properties":{"message":{"type":"string","description":"Message to echo"}},
		"required":["message"],"$schema":"http://json-schema.org/draft-07/schema#"}`
	everythingSumSchema = `{"type":"object","properties":{"a":{"type":"number","description":"First number"},
		"b":{"type":"number","description":"Second number"}},"required":["a","b"],"$schema":"http://json-schema.org/draft-07/schema#"}`
)

// TestConnector_ReferenceServer runs a connector against an MCP server
// nobody here wrote: the official reference server,
// @modelcontextprotocol/server-everything (TypeScript; Streamable HTTP with
// stateful sessions and SSE answers), as a child process. An admin
// registers and reviews it, and an agent calls its tools through the REST
// invoke path and the MCP front door. Without node or the installed
// server it is skipped, loudly.
func TestConnector_ReferenceServer(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("*** NO NODE: the reference MCP server test DID NOT RUN (install node 18+ and run make mcp-ts)")
	}
	if _, err := os.Stat(filepath.Join(everythingDir, "package.json")); err != nil {
		t.Skip("*** NO REFERENCE MCP SERVER: the reference MCP server test DID NOT RUN (run make mcp-ts)")
	}
	srv := startEverything(t, node)
	// Tool lists are not cached, so every review and invoke checks the
	// reviewed hashes against a list fetched in a new session.
	b := apptest.Start(t, &apptest.Options{ConnectorCacheTTL: time.Millisecond})

	r := b.Do("POST", "/v1/connectors", b.Admin(), map[string]any{"name": "everything", "url": srv.URL, "transport": "remote_http"})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	id := r.Body["connector"].(map[string]any)["id"].(string)
	source := r.Body["connector"].(map[string]any)["source_id"].(string)

	// Validation reaches the server, and every input schema it lists
	// (draft-07, by their $schema) compiles in outboxd's validator.
	r = b.Do("POST", "/v1/connectors/"+id+"/validate", b.Admin(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, true, r.Body["reachable"])
	require.Equal(t, "mcp-servers/everything", r.Body["server_name"])
	require.Empty(t, r.Body["errors"])
	validated := r.Body

	// The tools keep the server's names and schemas; their tiers come from
	// its annotations: readOnlyHint makes a read, which runs unattended,
	// and the rest are writes, which wait for approval.
	r = b.Do("GET", "/v1/connectors/"+id+"/tools", b.Admin(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	tools := byKey(r.Body["tools"], "name")
	require.Len(t, tools, int(validated["tool_count"].(float64)))
	for name, risk := range map[string]string{
		"echo": "read", "get-sum": "read", "get-env": "read", "get-structured-content": "read",
		"trigger-long-running-operation": "read", "toggle-simulated-logging": "write", "gzip-file-as-resource": "write",
	} {
		require.Contains(t, tools, name)
		require.Equal(t, risk, tools[name]["risk_level"], name)
		require.Equal(t, map[string]string{"read": "allow", "write": "require_approval"}[risk], tools[name]["mode"], name)
	}
	require.Equal(t, "Echoes back the input string", tools["echo"]["description"])
	require.JSONEq(t, everythingEchoSchema, jsonText(t, tools["echo"]["params"]))
	require.JSONEq(t, everythingSumSchema, jsonText(t, tools["get-sum"]["params"]))

	// The admin's review holds against the next list, fetched in a new
	// session: the server's schemas hash the same each time. get-env, which
	// returns the server's environment, is denied.
	r = b.Do("PUT", "/v1/connectors/"+id+"/tools", b.Admin(), map[string]string{"echo": "allow", "get-sum": "allow", "get-env": "deny"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	reviewed := byKey(r.Body["tools"], "name")
	for _, name := range []string{"echo", "get-sum", "get-env"} {
		require.Equal(t, tools[name]["hash"], reviewed[name]["reviewed_hash"], name)
		require.Equal(t, reviewed[name]["hash"], reviewed[name]["reviewed_hash"], name)
		require.Equal(t, false, reviewed[name]["drifted"], name)
	}
	require.Equal(t, "deny", reviewed["get-env"]["mode"])

	// The agent's catalog lists them as reviewed, with the server's
	// schemas, and the output schema of a tool that declares one.
	r = b.Do("GET", "/v1/sessions/"+apptest.Session+"/actions/available", b.Sandbox(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	catalog := map[string]map[string]any{}
	for _, a := range r.Body["actions"].([]any) {
		if a := a.(map[string]any); a["source"] == source {
			catalog[a["action"].(string)] = a
		}
	}
	require.Equal(t, "allow", catalog["echo"]["mode"])
	require.Equal(t, "read", catalog["echo"]["risk_level"])
	require.Equal(t, "at_least_once", catalog["echo"]["delivery"])
	require.Equal(t, false, catalog["echo"]["drifted"])
	require.Equal(t, "deny", catalog["get-env"]["mode"])
	require.JSONEq(t, everythingEchoSchema, jsonText(t, catalog["echo"]["params"]))
	require.Equal(t, []any{"temperature", "conditions", "humidity"}, catalog["get-structured-content"]["output"].(map[string]any)["required"])

	// An allowed call runs at once and answers with the server's content;
	// the invocation id reaches the server in _meta.
	r = invokeTool(b, source, "echo", map[string]any{"message": "hello from outboxd"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	inv := r.Body["invocation"].(map[string]any)
	require.Equal(t, "completed", inv["status"])
	require.JSONEq(t, `{"content":[{"type":"text","text":"Echo: hello from outboxd"}]}`, jsonText(t, r.Body["result"]))
	calls := srv.toolCalls()
	require.Len(t, calls, 1)
	require.Equal(t, "echo", calls[0].Params.Name)
	require.JSONEq(t, `{"message":"hello from outboxd"}`, string(calls[0].Params.Arguments))
	require.Equal(t, inv["id"], calls[0].Params.Meta["idempotency_key"])

	// Arguments that fail the tool's schema are refused by outboxd, naming
	// the field, and never reach the server; neither does a denied tool.
	for _, bad := range []struct {
		tool, field string
		params      map[string]any
	}{
		{"echo", "message", map[string]any{"message": 7}},
		{"get-sum", "b", map[string]any{"a": 1}},
		{"get-sum", "a", map[string]any{"a": "1", "b": 2}},
	} {
		r = invokeTool(b, source, bad.tool, bad.params)
		require.Equal(t, http.StatusBadRequest, r.Status, string(r.Raw))
		fields := r.Body["error"].(map[string]any)["details"].(map[string]any)["fields"].([]any)
		require.Equal(t, bad.field, fields[0].(map[string]any)["field"], string(r.Raw))
	}
	r = invokeTool(b, source, "get-env", map[string]any{})
	require.Equal(t, http.StatusForbidden, r.Status, string(r.Raw))
	require.Len(t, srv.toolCalls(), 1)

	// Numbers reach the server as numbers.
	r = invokeTool(b, source, "get-sum", map[string]any{"a": 19, "b": 23.5})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.JSONEq(t, `{"content":[{"type":"text","text":"The sum of 19 and 23.5 is 42.5."}]}`, jsonText(t, r.Body["result"]))
	require.JSONEq(t, `{"a":19,"b":23.5}`, string(srv.toolCalls()[1].Params.Arguments))

	// A tool that fails (the schema allows resourceId 0, the tool does
	// not) is a failed invocation with the server's message, not retried.
	r = invokeTool(b, source, "get-resource-reference", map[string]any{"resourceId": 0})
	require.Equal(t, http.StatusBadGateway, r.Status, string(r.Raw))
	inv = r.Body["invocation"].(map[string]any)
	require.Equal(t, "failed", inv["status"])
	require.Contains(t, inv["error"], "Invalid resourceId: 0. Must be a finite positive integer.")
	waitJobState(t, b, inv["id"].(string), "cancelled")

	// Structured content comes back next to the content, and an answer the
	// server streams after a while (two steps of 0.1 s) is waited for.
	r = invokeTool(b, source, "get-structured-content", map[string]any{"location": "Chicago"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	structured := r.Body["result"].(map[string]any)["structured_content"].(map[string]any)
	require.IsType(t, float64(0), structured["temperature"])
	require.IsType(t, "", structured["conditions"])
	require.IsType(t, float64(0), structured["humidity"])
	r = invokeTool(b, source, "trigger-long-running-operation", map[string]any{"duration": 0.2, "steps": 2})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.JSONEq(t, `{"content":[{"type":"text","text":"Long running operation completed. Duration: 0.2 seconds, Steps: 2."}]}`,
		jsonText(t, r.Body["result"]))

	// A write waits for a human, then the worker calls it.
	r = invokeTool(b, source, "toggle-simulated-logging", map[string]any{})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	pending := r.Body["invocation_id"].(string)
	require.Len(t, srv.toolCalls(), 5, "nothing runs before approval")
	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/invocations/"+pending+"/approve", b.Owner(), map[string]string{"mode": "once"}).Status)
	done := b.WaitStatus(pending, invocation.StatusCompleted, 10*time.Second)
	require.Contains(t, jsonText(t, done["result"]), "Started simulated, random-leveled logging")

	// Through the MCP front door, the tools are listed with the server's
	// schemas, and calls answer as the server did.
	session := mcpSession(t, b, b.Sandbox())
	prefix := strings.ReplaceAll(source, ":", "_") + "."
	var echo *mcpsdk.Tool
	for tool, err := range session.Tools(context.Background(), nil) {
		require.NoError(t, err)
		if tool.Name == prefix+"echo" {
			echo = tool
		}
	}
	require.NotNil(t, echo, "%secho is listed", prefix)
	require.JSONEq(t, everythingEchoSchema, jsonText(t, echo.InputSchema))
	res, err := session.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: prefix + "get-sum", Arguments: map[string]any{"a": 2, "b": 40}})
	require.NoError(t, err)
	require.False(t, res.IsError, callText(t, res))
	require.Equal(t, "The sum of 2 and 40 is 42.", callText(t, res))
	res, err = session.CallTool(context.Background(), &mcpsdk.CallToolParams{Name: prefix + "get-resource-reference", Arguments: map[string]any{"resourceId": 1.5}})
	require.NoError(t, err)
	require.True(t, res.IsError)
	require.Contains(t, callText(t, res), "Invalid resourceId: 1.5. Must be a finite positive integer.")

	// Each call ran once, and every session outboxd opened on this
	// stateful server it also ended.
	var names []string
	for _, c := range srv.toolCalls() {
		names = append(names, c.Params.Name)
	}
	require.Equal(t, []string{"echo", "get-sum", "get-resource-reference", "get-structured-content",
		"trigger-long-running-operation", "toggle-simulated-logging", "get-sum", "get-resource-reference"}, names)
	opened, ended := srv.sessions()
	require.NotZero(t, opened)
	require.Equal(t, opened, ended, "a DELETE for every initialize")
}

// byKey indexes a JSON array of objects by the string at key.
func byKey(list any, key string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, item := range list.([]any) {
		obj := item.(map[string]any)
		out[obj[key].(string)] = obj
	}
	return out
}

// jsonText encodes v, for comparing decoded JSON with JSONEq.
func jsonText(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	return string(raw)
}

// everythingDir is the official reference MCP server,
// @modelcontextprotocol/server-everything, installed next to the
// TypeScript SDK by `make mcp-ts`.
var everythingDir = filepath.Join(mcpTSDir, "node_modules", "@modelcontextprotocol", "server-everything")

// everythingReady is the line the server prints once it listens.
const everythingReady = "MCP Streamable HTTP Server listening on port"

// everythingServer is the reference server run as a child process,
// reached through a reverse proxy that records what it forwards: the
// server's own log does not say which requests it got.
type everythingServer struct {
	// URL is the proxy's MCP endpoint.
	URL string

	mu sync.Mutex
	// requests are the JSON-RPC requests posted, in order.
	requests []everythingRequest
	// deletes counts the DELETEs ending a session.
	deletes int
}

// everythingRequest is a JSON-RPC request as it reached the server.
type everythingRequest struct {
	Method string `json:"method"`
	Params struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Meta      map[string]any  `json:"_meta"`
	} `json:"params"`
}

// toolCalls are the tools/call requests the server received.
func (s *everythingServer) toolCalls() []everythingRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	var calls []everythingRequest
	for _, r := range s.requests {
		if r.Method == "tools/call" {
			calls = append(calls, r)
		}
	}
	return calls
}

// sessions counts the sessions opened (initialize requests) and ended
// (DELETEs).
func (s *everythingServer) sessions() (opened, ended int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.requests {
		if r.Method == "initialize" {
			opened++
		}
	}
	return opened, s.deletes
}

// startEverything runs the reference server until the test ends, and puts
// the recording proxy in front of it. The server listens on a free port of
// every interface (it takes no address), and is reached on loopback.
func startEverything(t *testing.T, node string) *everythingServer {
	t.Helper()
	port := runEverything(t, node)
	target, err := url.Parse("http://127.0.0.1:" + port)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	// A transport of its own, whose connections to the server are closed
	// once the proxy is.
	transport := http.DefaultTransport.(*http.Transport).Clone()
	proxy.Transport = transport
	t.Cleanup(transport.CloseIdleConnections)
	s := &everythingServer{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost:
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			var req everythingRequest
			if json.Unmarshal(body, &req) == nil && req.Method != "" {
				s.mu.Lock()
				s.requests = append(s.requests, req)
				s.mu.Unlock()
			}
		case http.MethodDelete:
			s.mu.Lock()
			s.deletes++
			s.mu.Unlock()
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL + "/mcp"
	return s
}

// runEverything starts the server process and returns its port once it
// says it listens. The port is picked free and then handed over, so
// another process can take it in between: the server then exits saying
// so, and another port is tried. The process is killed when the test
// ends, and its output shown if the test failed. Its environment is PATH
// and PORT only: one of its tools returns the environment.
func runEverything(t *testing.T, node string) string {
	t.Helper()
	for try := 1; ; try++ {
		port := freePort(t)
		out := &processOutput{want: everythingReady, seen: make(chan struct{})}
		cmd := exec.Command(node, filepath.Join(everythingDir, "dist", "index.js"), "streamableHttp")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "PORT=" + port}
		cmd.Stdout, cmd.Stderr = out, out
		require.NoError(t, cmd.Start())
		exited := make(chan struct{})
		go func() {
			_ = cmd.Wait()
			close(exited)
		}()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-exited
			if t.Failed() {
				t.Logf("the reference MCP server's output:\n%s", out)
			}
		})
		select {
		case <-out.seen:
			return port
		case <-exited:
			if strings.Contains(out.String(), "already in use") && try < 3 {
				continue
			}
			t.Fatalf("the reference MCP server exited before listening: %s", out)
		case <-time.After(20 * time.Second):
			t.Fatalf("the reference MCP server did not listen within 20s: %s", out)
		}
	}
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return strconv.Itoa(port)
}

// processOutput collects a process's output and closes seen once want was
// written.
type processOutput struct {
	want string
	seen chan struct{}

	mu   sync.Mutex
	buf  bytes.Buffer
	done bool
}

func (o *processOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf.Write(p)
	if !o.done && strings.Contains(o.buf.String(), o.want) {
		o.done = true
		close(o.seen)
	}
	return len(p), nil
}

func (o *processOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}
