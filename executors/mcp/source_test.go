package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/mcp"
	"github.com/outboxd/outboxd/internal/platform/netguard"
)

const createIssueSchema = `{"type":"object","properties":{"title":{"type":"string"},"priority":{"type":"integer"}},"required":["title"]}`

// toolCall is what a test tool saw of one call.
type toolCall struct {
	Arguments json.RawMessage
	Meta      map[string]any
	Header    http.Header
}

// recordingTool is a tool handler recording its calls and answering with
// result.
type recordingTool struct {
	result *mcpsdk.CallToolResult

	mu    sync.Mutex
	calls []toolCall
}

func (rt *recordingTool) handle(_ context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
	call := toolCall{Arguments: append(json.RawMessage(nil), req.Params.Arguments...), Meta: req.Params.Meta}
	if req.Extra != nil {
		call.Header = req.Extra.Header.Clone()
	}
	rt.mu.Lock()
	rt.calls = append(rt.calls, call)
	rt.mu.Unlock()
	return rt.result, nil
}

func (rt *recordingTool) recorded() []toolCall {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return append([]toolCall(nil), rt.calls...)
}

func TestSourceID(t *testing.T) {
	t.Parallel()

	id := uuid.New()
	require.Equal(t, "connector:"+id.String(), mcp.SourceID(id))

	parsed, ok := mcp.ParseSourceID(mcp.SourceID(id))
	require.True(t, ok)
	require.Equal(t, id, parsed)

	for _, bad := range []string{"slack", "connector:", "connector:not-a-uuid", "connector:" + strings.ToUpper(id.String()), "connector:{" + id.String() + "}"} {
		_, ok := mcp.ParseSourceID(bad)
		require.False(t, ok, bad)
	}

	client := newClient(t, nil)
	require.Equal(t, mcp.SourceID(id), client.Source(&mcp.Connector{ID: id}).ID())
}

func TestSource_ListActions(t *testing.T) {
	t.Parallel()

	server := newTestServer(t, serverOptions{})
	server.addTool("create_issue", "Create an issue", createIssueSchema, nil, nil)
	server.addTool("search", "", objectSchema, &mcpsdk.ToolAnnotations{ReadOnlyHint: true, Title: "Search issues"}, nil)
	client := newClient(t, nil)
	conn := server.connector()
	conn.RiskPolicy.Tools = map[string]executors.Tier{"create_issue": "danger"}
	source := client.Source(conn)

	// The source keeps its own copy of the connector.
	conn.RiskPolicy.Tools["create_issue"] = executors.TierR1

	defs, err := source.ListActions(context.Background(), executors.ExecContext{})
	require.NoError(t, err)
	require.Len(t, defs, 2)
	byID := map[string]executors.Definition{}
	for _, d := range defs {
		byID[d.ID] = d
	}

	create := byID["create_issue"]
	require.Equal(t, "Create an issue", create.Description)
	require.Equal(t, executors.TierR3, create.Tier, "the definition carries the tier derived from the risk policy")
	require.JSONEq(t, createIssueSchema, string(create.Params))

	search := byID["search"]
	require.Equal(t, "Search issues", search.Description, "the title stands in for a missing description")
	require.Equal(t, executors.TierR1, search.Tier)

	// The params schema is usable by the validator as is.
	validator := executors.NewValidator()
	fieldErrs, err := validator.Validate(create.Params, json.RawMessage(`{"priority":"high"}`))
	require.NoError(t, err)
	require.Len(t, fieldErrs, 2)
}

func TestSource_Execute(t *testing.T) {
	t.Parallel()

	ctx := context.Background()

	type testBundle struct {
		server *testServer
		client *mcp.Client
		conn   *mcp.Connector
		source executors.Source
		tool   *recordingTool
	}

	setup := func(t *testing.T, opts serverOptions, cfg *mcp.Config) *testBundle {
		t.Helper()
		bundle := &testBundle{
			server: newTestServer(t, opts),
			client: newClient(t, cfg),
			tool: &recordingTool{result: &mcpsdk.CallToolResult{
				Content:           []mcpsdk.Content{&mcpsdk.TextContent{Text: "created ISS-1"}},
				StructuredContent: map[string]any{"id": "ISS-1"},
			}},
		}
		bundle.server.addTool("create_issue", "Create an issue", createIssueSchema, nil, bundle.tool.handle)
		bundle.conn = bundle.server.connector()
		bundle.source = bundle.client.Source(bundle.conn)
		return bundle
	}

	execContext := func() executors.ExecContext {
		return executors.ExecContext{Token: testSecret, OrganizationID: "org_1", SessionID: "sess_1", IdempotencyKey: "inv_0123"}
	}

	const params = `{"title":"Broken build","priority":2}`

	t.Run("CallsTool", func(t *testing.T) {
		t.Parallel()

		for _, stateless := range []bool{false, true} {
			t.Run(fmt.Sprintf("Stateless%t", stateless), func(t *testing.T) {
				t.Parallel()
				bundle := setup(t, serverOptions{stateless: stateless}, nil)

				res, err := bundle.source.Execute(ctx, "create_issue", json.RawMessage(params), execContext())
				require.NoError(t, err)
				require.JSONEq(t, `{"content":[{"type":"text","text":"created ISS-1"}],"structured_content":{"id":"ISS-1"}}`, string(res.Data))
				require.False(t, res.Conflict)

				calls := bundle.tool.recorded()
				require.Len(t, calls, 1)
				require.JSONEq(t, params, string(calls[0].Arguments))
				require.Equal(t, "inv_0123", calls[0].Meta[mcp.MetaIdempotencyKey])
				require.Equal(t, 1, bundle.server.count("tools/call"))
			})
		}
	})

	t.Run("WithoutIdempotencyKeyOrParams", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, serverOptions{}, nil)
		bundle.tool.result = &mcpsdk.CallToolResult{}

		ec := execContext()
		ec.IdempotencyKey = ""
		res, err := bundle.source.Execute(ctx, "create_issue", nil, ec)
		require.NoError(t, err)
		require.JSONEq(t, `{"content":[]}`, string(res.Data))

		calls := bundle.tool.recorded()
		require.Len(t, calls, 1)
		require.JSONEq(t, `{}`, string(calls[0].Arguments))
		require.NotContains(t, calls[0].Meta, mcp.MetaIdempotencyKey)
	})

	t.Run("ResultFreeOfURLSecrets", func(t *testing.T) {
		t.Parallel()
		// The key in the connector's URL, which only admins read, is kept
		// out of the result the agent reads, as it is out of errors.
		const key = "k3y-0123456789abcdef"
		bundle := setup(t, serverOptions{}, nil)
		bundle.source = bundle.client.Source(&mcp.Connector{
			ID: bundle.conn.ID, URL: bundle.conn.URL + "/?key=" + key, Auth: bundle.conn.Auth,
		})
		bundle.tool.result = &mcpsdk.CallToolResult{
			Content:           []mcpsdk.Content{&mcpsdk.TextContent{Text: "connected to /mcp?key=" + key}},
			StructuredContent: map[string]any{"endpoint": "https://mcp.example.com/?key=" + url.QueryEscape(key)},
		}

		res, err := bundle.source.Execute(ctx, "create_issue", json.RawMessage(params), execContext())
		require.NoError(t, err)
		require.NotContains(t, string(res.Data), "0123456789abcdef")
		require.Contains(t, string(res.Data), "connected to /mcp?[REDACTED]", "the rest of the text is kept")
	})

	t.Run("ToolError", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, serverOptions{}, nil)
		bundle.tool.result = &mcpsdk.CallToolResult{
			IsError: true,
			Content: []mcpsdk.Content{
				&mcpsdk.TextContent{Text: "project not found"},
				&mcpsdk.TextContent{Text: "token " + testSecret + " has no access"},
			},
		}

		_, err := bundle.source.Execute(ctx, "create_issue", json.RawMessage(params), execContext())
		execErr := requireExecError(t, err)
		require.Equal(t, mcp.CodeToolError, execErr.Code)
		require.False(t, execErr.Retryable)
		require.Equal(t, "project not found\ntoken [REDACTED] has no access", execErr.Message)
		require.Len(t, bundle.tool.recorded(), 1, "a tool error is not retried")
	})

	t.Run("ToolErrorTruncated", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, serverOptions{}, nil)
		bundle.tool.result = &mcpsdk.CallToolResult{
			IsError: true,
			Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: strings.Repeat("stack frame\n", 10000)}},
		}

		_, err := bundle.source.Execute(ctx, "create_issue", json.RawMessage(params), execContext())
		execErr := requireExecError(t, err)
		require.Equal(t, mcp.CodeToolError, execErr.Code)
		require.Less(t, len(execErr.Message), 1100)
		require.True(t, strings.HasSuffix(execErr.Message, "…"))
	})

	t.Run("ResponseTooLarge", func(t *testing.T) {
		t.Parallel()

		// The answer is written by hand, a chunk at a time: the SDK's server
		// takes many seconds to encode 17 MiB under the race detector, and
		// on a loaded machine more than the call's timeout, which then
		// classified the call as a timeout.
		for _, contentType := range []string{"application/json", "text/event-stream"} {
			// A guard of minutes: reading 16 MiB under the race detector on
			// a loaded machine is slow, and the default 30 s is not the
			// subject here.
			bundle := setup(t, serverOptions{wrap: answerRPC("tools/call", contentType, 17<<20)}, &mcp.Config{CallTimeout: 5 * time.Minute})

			_, err := bundle.source.Execute(ctx, "create_issue", json.RawMessage(params), execContext())
			execErr := requireExecError(t, err)
			require.Equal(t, mcp.CodeResponseTooLarge, execErr.Code, contentType)
			require.False(t, execErr.Retryable, "the tool ran; its answer would be as large again")
			require.Contains(t, execErr.Message, "the tool may have run", "the agent is told not to call again blindly")
			require.Equal(t, 1, bundle.server.count("tools/call"), contentType)
		}
	})

	t.Run("ServerRequestsBounded", func(t *testing.T) {
		t.Parallel()

		// The SDK answers each ping the server sends with a request of its
		// own: 2,000 pings in one answer (130 KB) were 2,000 requests from
		// the worker.
		for _, result := range []bool{true, false} {
			bundle := setup(t, serverOptions{wrap: pingFlood("tools/call", 2000, result)}, nil)

			res, err := bundle.source.Execute(ctx, "create_issue", json.RawMessage(params), execContext())
			if result {
				require.NoError(t, err, "the call was answered")
				require.JSONEq(t, `{"content":[]}`, string(res.Data))
			} else {
				execErr := requireExecError(t, err)
				require.Equal(t, mcp.CodeResponseTooLarge, execErr.Code)
				require.False(t, execErr.Retryable)
			}
			require.Less(t, len(bundle.server.recorded()), 200, "result: %v", result)
		}
	})

	t.Run("UnknownTool", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, serverOptions{}, nil)

		_, err := bundle.source.Execute(ctx, "drop_database", json.RawMessage(`{}`), execContext())
		execErr := requireExecError(t, err)
		require.ErrorIs(t, err, executors.ErrUnknownAction)
		require.Equal(t, mcp.CodeUnknownAction, execErr.Code)
		require.False(t, execErr.Retryable)
		require.Zero(t, bundle.server.count("tools/call"))
	})

	t.Run("ToolRemovedSinceListing", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, serverOptions{}, nil)
		_, err := bundle.source.ListActions(ctx, execContext())
		require.NoError(t, err)
		bundle.server.server.RemoveTools("create_issue")

		_, err = bundle.source.Execute(ctx, "create_issue", json.RawMessage(params), execContext())
		execErr := requireExecError(t, err)
		require.Equal(t, mcp.CodeRPCError, execErr.Code)
		require.False(t, execErr.Retryable)
		require.Contains(t, execErr.Message, "unknown tool")
	})

	t.Run("InvalidParams", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, serverOptions{}, nil)

		for _, params := range []string{`[1,2]`, `"title"`, `{"title":`, `null`} {
			_, err := bundle.source.Execute(ctx, "create_issue", json.RawMessage(params), execContext())
			execErr := requireExecError(t, err)
			require.Equal(t, mcp.CodeInvalidParams, execErr.Code, params)
			require.False(t, execErr.Retryable)
		}
		require.Zero(t, bundle.server.count("tools/call"))
	})

	t.Run("LostSessionRetriedOnce", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, serverOptions{wrap: dropSessionOnce("tools/call")}, nil)

		res, err := bundle.source.Execute(ctx, "create_issue", json.RawMessage(params), execContext())
		require.NoError(t, err)
		require.Contains(t, string(res.Data), "ISS-1")
		require.Equal(t, 2, bundle.server.count("tools/call"))
		require.Len(t, bundle.tool.recorded(), 1, "the lost request never reached the tool")
		// One session for the listing, two for the call.
		require.Equal(t, 3, bundle.server.count("initialize"))
	})

	t.Run("LostSessionTwice", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, serverOptions{wrap: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") != "" && strings.Contains(peekBody(r), `"tools/call"`) {
					http.Error(w, "session not found", http.StatusNotFound)
					return
				}
				next.ServeHTTP(w, r)
			})
		}}, nil)

		_, err := bundle.source.Execute(ctx, "create_issue", json.RawMessage(params), execContext())
		execErr := requireExecError(t, err)
		require.Equal(t, "http_404", execErr.Code)
		require.False(t, execErr.Retryable)
		require.Equal(t, 2, bundle.server.count("tools/call"), "retried once, not more")
	})

	t.Run("ServerHangs", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, serverOptions{}, &mcp.Config{CallTimeout: 200 * time.Millisecond})
		release := make(chan struct{})
		t.Cleanup(func() { close(release) })
		bundle.server.addTool("create_issue", "", createIssueSchema, nil, func(ctx context.Context, _ *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return &mcpsdk.CallToolResult{}, nil
		})

		start := time.Now()
		_, err := bundle.source.Execute(ctx, "create_issue", json.RawMessage(params), execContext())
		execErr := requireExecError(t, err)
		require.Equal(t, mcp.CodeTimeout, execErr.Code)
		require.True(t, execErr.Retryable)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		// The tool only returns at the test's end: without the call
		// timeout, Execute would not return at all. The bound is loose for
		// a loaded machine.
		require.Less(t, time.Since(start), 10*time.Second)
	})

	t.Run("ServerDown", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, serverOptions{}, nil)
		_, err := bundle.source.ListActions(ctx, execContext())
		require.NoError(t, err)
		bundle.server.http.Close()

		_, err = bundle.source.Execute(ctx, "create_issue", json.RawMessage(params), execContext())
		execErr := requireExecError(t, err)
		require.Equal(t, mcp.CodeUnreachable, execErr.Code)
		require.True(t, execErr.Retryable)
	})

	t.Run("KeyInURLPathKeptOut", func(t *testing.T) {
		t.Parallel()
		// Some servers take their key in the path (…/api/mcp/s/<key>/mcp):
		// an agent reading it in an error or a result could call the server
		// itself, around outboxd.
		const key = "NjM0ZTk3YzQtOGE1Ni00Y2Ri"
		bundle := setup(t, serverOptions{}, nil)
		conn := &mcp.Connector{ID: bundle.conn.ID, URL: bundle.conn.URL + "/api/mcp/s/" + key + "/mcp", Auth: bundle.conn.Auth}
		bundle.source = bundle.client.Source(conn)
		bundle.tool.result = &mcpsdk.CallToolResult{
			Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: "served at " + conn.URL}},
		}

		res, err := bundle.source.Execute(ctx, "create_issue", json.RawMessage(params), execContext())
		require.NoError(t, err)
		require.NotContains(t, string(res.Data), key)
		require.Contains(t, string(res.Data), "/api/mcp/s/[REDACTED]/mcp", "the rest of the path is kept")

		// A server's error quoting the path it was called at.
		bundle = setup(t, serverOptions{wrap: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body := peekBody(r)
				if rpcMethod([]byte(body)) != "tools/call" {
					next.ServeHTTP(w, r)
					return
				}
				var req struct {
					ID json.RawMessage `json:"id"`
				}
				_ = json.Unmarshal([]byte(body), &req)
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":%q}}`, req.ID, "no such tool at "+r.URL.Path)
			})
		}}, nil)
		bundle.source = bundle.client.Source(&mcp.Connector{ID: bundle.conn.ID, URL: bundle.conn.URL + "/api/mcp/s/" + key + "/mcp", Auth: bundle.conn.Auth})
		_, err = bundle.source.Execute(ctx, "create_issue", json.RawMessage(params), execContext())
		execErr := requireExecError(t, err)
		require.Equal(t, mcp.CodeRPCError, execErr.Code)
		require.NotContains(t, execErr.Message, key)
		require.Contains(t, execErr.Message, "no such tool at /api/mcp/s/[REDACTED]/mcp")
	})

	t.Run("ServerErrors", func(t *testing.T) {
		t.Parallel()

		for status, wantRetryable := range map[int]bool{
			http.StatusInternalServerError: true,
			http.StatusBadGateway:          true,
			http.StatusServiceUnavailable:  true,
			http.StatusBadRequest:          false,
		} {
			bundle := setup(t, serverOptions{wrap: failRPC("tools/call", status, "failure for token "+testSecret)}, nil)

			_, err := bundle.source.Execute(ctx, "create_issue", json.RawMessage(params), execContext())
			execErr := requireExecError(t, err)
			require.Equal(t, fmt.Sprintf("http_%d", status), execErr.Code)
			require.Equal(t, wantRetryable, execErr.Retryable, status)
			require.Empty(t, bundle.tool.recorded())
		}
	})

	// A 429 waits as the server asks; without Retry-After, 30 s, as for
	// the providers, not an attempt spent a second later.
	for name, rateLimit := range map[string]struct {
		retryAfter string
		wait       time.Duration
	}{"RateLimited": {"12", 12 * time.Second}, "RateLimitedWithoutRetryAfter": {"", 30 * time.Second}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			bundle := setup(t, serverOptions{wrap: func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if strings.Contains(peekBody(r), `"tools/call"`) {
						if rateLimit.retryAfter != "" {
							w.Header().Set("Retry-After", rateLimit.retryAfter)
						}
						http.Error(w, "slow down", http.StatusTooManyRequests)
						return
					}
					next.ServeHTTP(w, r)
				})
			}}, nil)

			_, err := bundle.source.Execute(ctx, "create_issue", json.RawMessage(params), execContext())
			execErr := requireExecError(t, err)
			require.Equal(t, mcp.CodeRateLimited, execErr.Code)
			require.True(t, execErr.Retryable)
			require.Equal(t, rateLimit.wait, execErr.RetryAfter)
			require.Empty(t, bundle.tool.recorded())
		})
	}

	t.Run("BearerAuth", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, serverOptions{wrap: requireHeader("Authorization", "Bearer "+testSecret)}, nil)
		bundle.conn.Auth = mcp.Auth{Type: mcp.AuthBearer}
		source := bundle.client.Source(bundle.conn)

		_, err := source.Execute(ctx, "create_issue", json.RawMessage(params), execContext())
		require.NoError(t, err)
		for _, r := range bundle.server.recorded() {
			require.Equal(t, "Bearer "+testSecret, r.Header.Get("Authorization"), "%s %s", r.HTTPMethod, r.RPCMethod)
		}
		calls := bundle.tool.recorded()
		require.Len(t, calls, 1)
		require.Equal(t, "Bearer "+testSecret, calls[0].Header.Get("Authorization"))
	})

	t.Run("CustomHeaderAuth", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, serverOptions{wrap: requireHeader("X-Api-Key", testSecret)}, nil)
		bundle.conn.Auth = mcp.Auth{Type: mcp.AuthCustomHeader, HeaderName: "x-api-key"}
		source := bundle.client.Source(bundle.conn)

		_, err := source.Execute(ctx, "create_issue", json.RawMessage(params), execContext())
		require.NoError(t, err)
		for _, r := range bundle.server.recorded() {
			require.Equal(t, testSecret, r.Header.Get("X-Api-Key"))
			require.Empty(t, r.Header.Get("Authorization"))
		}
	})

	t.Run("Unauthorized", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, serverOptions{wrap: requireHeader("Authorization", "Bearer other")}, nil)
		bundle.conn.Auth = mcp.Auth{Type: mcp.AuthBearer}
		source := bundle.client.Source(bundle.conn)

		_, err := source.ListActions(ctx, execContext())
		execErr := requireExecError(t, err)
		require.Equal(t, executors.CodeUnauthorized, execErr.Code)
		require.False(t, execErr.Retryable)

		_, err = source.Execute(ctx, "create_issue", json.RawMessage(params), execContext())
		execErr = requireExecError(t, err)
		require.Equal(t, executors.CodeUnauthorized, execErr.Code)
		require.False(t, execErr.Retryable)
	})

	t.Run("ForbiddenOnCall", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, serverOptions{wrap: failRPC("tools/call", http.StatusForbidden, "token "+testSecret+" may not call tools")}, nil)

		_, err := bundle.source.Execute(ctx, "create_issue", json.RawMessage(params), execContext())
		execErr := requireExecError(t, err)
		require.Equal(t, executors.CodeUnauthorized, execErr.Code)
		require.False(t, execErr.Retryable)
	})

	t.Run("SecretScrubbedFromRPCErrors", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, serverOptions{}, nil)
		bundle.server.addTool("create_issue", "", createIssueSchema, nil, func(context.Context, *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad request from " + testSecret}
		})

		_, err := bundle.source.Execute(ctx, "create_issue", json.RawMessage(params), execContext())
		execErr := requireExecError(t, err)
		require.Equal(t, mcp.CodeRPCError, execErr.Code)
		require.False(t, execErr.Retryable)
		require.Contains(t, execErr.Message, "bad request from [REDACTED]")
	})

	t.Run("MissingSecret", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, serverOptions{}, nil)
		bundle.conn.Auth = mcp.Auth{Type: mcp.AuthBearer}
		source := bundle.client.Source(bundle.conn)

		ec := execContext()
		ec.Token = ""
		_, err := source.Execute(ctx, "create_issue", json.RawMessage(params), ec)
		execErr := requireExecError(t, err)
		require.Equal(t, mcp.CodeInvalidConnector, execErr.Code)
		require.False(t, execErr.Retryable)
		require.Empty(t, bundle.server.recorded())

		ec.Token = "line\r\nX-Injected: 1"
		_, err = source.Execute(ctx, "create_issue", json.RawMessage(params), ec)
		execErr = requireExecError(t, err)
		require.Equal(t, mcp.CodeInvalidConnector, execErr.Code)
		require.NotContains(t, execErr.Message, "X-Injected")
		require.Empty(t, bundle.server.recorded())
	})

	t.Run("SecretNotSentAcrossRedirects", func(t *testing.T) {
		t.Parallel()
		target := newTestServer(t, serverOptions{})
		target.addTool("create_issue", "", createIssueSchema, nil, textResult("ok"))
		bundle := setup(t, serverOptions{wrap: func(http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, target.URL, http.StatusTemporaryRedirect)
			})
		}}, nil)
		bundle.conn.Auth = mcp.Auth{Type: mcp.AuthBearer}
		source := bundle.client.Source(bundle.conn)

		_, err := source.Execute(ctx, "create_issue", json.RawMessage(params), execContext())
		require.NoError(t, err)
		require.NotEmpty(t, bundle.server.recorded())
		for _, r := range bundle.server.recorded() {
			require.Equal(t, "Bearer "+testSecret, r.Header.Get("Authorization"))
		}
		require.Equal(t, 1, target.count("tools/call"))
		for _, r := range target.recorded() {
			require.Empty(t, r.Header.Get("Authorization"), "%s %s", r.HTTPMethod, r.RPCMethod)
		}
	})

	t.Run("CallerCanceled", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, serverOptions{}, nil)
		_, err := bundle.source.ListActions(ctx, execContext())
		require.NoError(t, err)

		canceledCtx, cancel := context.WithCancel(ctx)
		cancel()
		_, err = bundle.source.Execute(canceledCtx, "create_issue", json.RawMessage(params), execContext())
		execErr := requireExecError(t, err)
		require.Equal(t, mcp.CodeCanceled, execErr.Code)
		require.True(t, execErr.Retryable)
		require.ErrorIs(t, err, context.Canceled)
		require.Empty(t, bundle.tool.recorded())
	})
}

func TestClient_PrivateNetworks(t *testing.T) {
	t.Parallel()

	ctx := context.Background()

	setup := func(t *testing.T) (*testServer, *mcp.Client) {
		t.Helper()
		server := newTestServer(t, serverOptions{})
		server.addTool("create_issue", "", createIssueSchema, nil, nil)
		client, err := mcp.New(nil)
		require.NoError(t, err)
		t.Cleanup(client.CloseIdleConnections)
		return server, client
	}

	requireRefused := func(t *testing.T, err error) {
		t.Helper()
		execErr := requireExecError(t, err)
		require.Equal(t, mcp.CodeURLNotAllowed, execErr.Code)
		require.False(t, execErr.Retryable)
	}

	t.Run("LiteralLoopback", func(t *testing.T) {
		t.Parallel()
		server, client := setup(t)
		conn := server.connector()

		_, err := client.ListTools(ctx, conn, "")
		requireRefused(t, err)
		_, err = client.Source(conn).Execute(ctx, "create_issue", json.RawMessage(`{"title":"x"}`), executors.ExecContext{})
		requireRefused(t, err)
		require.Empty(t, server.recorded())
	})

	t.Run("NameResolvingToLoopback", func(t *testing.T) {
		t.Parallel()
		server, client := setup(t)
		u, err := url.Parse(server.URL)
		require.NoError(t, err)
		u.Host = "localhost:" + u.Port()
		conn := server.connector()
		conn.URL = u.String()
		require.NoError(t, netguard.CheckURL(conn.URL, false), "names are checked at dial time")

		_, err = client.ListTools(ctx, conn, "")
		requireRefused(t, err)
		require.Contains(t, err.Error(), "refused address")
		require.Empty(t, server.recorded())

		diag := client.Validate(ctx, conn, "")
		require.False(t, diag.Reachable)
		require.Len(t, diag.Errors, 1)
		require.Contains(t, diag.Errors[0], mcp.CodeURLNotAllowed)
	})

	t.Run("RedirectToLoopback", func(t *testing.T) {
		t.Parallel()
		// The redirecting server is reached with the guard off; the guard
		// of a second client then refuses the hop it points to.
		server, client := setup(t)
		var redirects atomic.Int32
		redirector := newTestServer(t, serverOptions{wrap: func(http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				redirects.Add(1)
				http.Redirect(w, r, server.URL, http.StatusTemporaryRedirect)
			})
		}})
		u, err := url.Parse(redirector.URL)
		require.NoError(t, err)
		u.Host = "localhost:" + u.Port()
		conn := redirector.connector()
		conn.URL = u.String()

		_, err = client.ListTools(ctx, conn, "")
		requireRefused(t, err)
		require.Zero(t, redirects.Load(), "the first hop is refused already")
		require.Empty(t, server.recorded())
	})
}

// failRPC wraps an MCP handler so POSTs of method are answered with status
// and body.
func failRPC(method string, status int, body string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if rpcMethod([]byte(peekBody(r))) == method {
				http.Error(w, body, status)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// answerRPC answers the requests of method in place of the server: a
// result with a text of size bytes, written a chunk at a time as
// contentType (application/json or text/event-stream), until the client
// stops reading.
func answerRPC(method, contentType string, size int) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body := peekBody(r)
			if rpcMethod([]byte(body)) != method {
				next.ServeHTTP(w, r)
				return
			}
			var req struct {
				ID json.RawMessage `json:"id"`
			}
			_ = json.Unmarshal([]byte(body), &req)
			head := `{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"content":[{"type":"text","text":"`
			tail := `"}]}}`
			if contentType == "text/event-stream" {
				head, tail = "event: message\ndata: "+head, tail+"\n\n"
			}
			w.Header().Set("Content-Type", contentType)
			if _, err := io.WriteString(w, head); err != nil {
				return
			}
			chunk := strings.Repeat("x", 64<<10)
			for written := 0; written < size; written += len(chunk) {
				if _, err := io.WriteString(w, chunk); err != nil {
					return
				}
			}
			_, _ = io.WriteString(w, tail)
		})
	}
}

// pingFlood answers the requests of method in place of the server with
// an event stream of n pings, then, when result is set, the request's
// (empty) result.
func pingFlood(method string, n int, result bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body := peekBody(r)
			if rpcMethod([]byte(body)) != method {
				next.ServeHTTP(w, r)
				return
			}
			var req struct {
				ID json.RawMessage `json:"id"`
			}
			_ = json.Unmarshal([]byte(body), &req)
			var b strings.Builder
			for i := range n {
				fmt.Fprintf(&b, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"ping-%d\",\"method\":\"ping\"}\n\n", i)
			}
			if result {
				fmt.Fprintf(&b, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[]}}\n\n", req.ID)
			}
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, b.String())
		})
	}
}

// peekBody reads r's body and puts it back.
func peekBody(r *http.Request) string {
	if r.Body == nil {
		return ""
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	return string(body)
}
