package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/mcp"
	"github.com/outboxd/outboxd/policy"
)

const objectSchema = `{"type":"object","properties":{"query":{"type":"string","description":"What to look for"}},"required":["query"]}`

func TestNew(t *testing.T) {
	t.Parallel()

	t.Run("NilConfigUsesDefaults", func(t *testing.T) {
		t.Parallel()

		client, err := mcp.New(nil)
		require.NoError(t, err)
		require.NotNil(t, client)
	})

	t.Run("WithDefaults", func(t *testing.T) {
		t.Parallel()

		cfg := (&mcp.Config{}).WithDefaults()
		require.Equal(t, 15*time.Second, cfg.ListTimeout)
		require.Equal(t, 30*time.Second, cfg.CallTimeout)
		require.Equal(t, 5*time.Minute, cfg.CacheTTL)
		require.False(t, cfg.AllowPrivateNetworks)
		require.NotNil(t, cfg.HTTPClient)

		cfg = (&mcp.Config{ListTimeout: time.Second, CallTimeout: 2 * time.Second, CacheTTL: time.Minute, AllowPrivateNetworks: true}).WithDefaults()
		require.Equal(t, time.Second, cfg.ListTimeout)
		require.Equal(t, 2*time.Second, cfg.CallTimeout)
		require.Equal(t, time.Minute, cfg.CacheTTL)
		require.True(t, cfg.AllowPrivateNetworks)
	})

	t.Run("NegativeDurations", func(t *testing.T) {
		t.Parallel()

		for _, cfg := range []*mcp.Config{{ListTimeout: -1}, {CallTimeout: -1}, {CacheTTL: -1}} {
			_, err := mcp.New(cfg)
			require.Error(t, err)
		}
	})

	t.Run("GuardNeedsHTTPTransport", func(t *testing.T) {
		t.Parallel()

		custom := &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, nil })}
		_, err := mcp.New(&mcp.Config{HTTPClient: custom})
		require.ErrorContains(t, err, "AllowPrivateNetworks")

		_, err = mcp.New(&mcp.Config{HTTPClient: custom, AllowPrivateNetworks: true})
		require.NoError(t, err)

		_, err = mcp.New(&mcp.Config{HTTPClient: &http.Client{Transport: &http.Transport{}}})
		require.NoError(t, err)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestClient_ListTools(t *testing.T) {
	t.Parallel()

	ctx := context.Background()

	type testBundle struct {
		server *testServer
		client *mcp.Client
		conn   *mcp.Connector
	}

	setup := func(t *testing.T, opts serverOptions, cfg *mcp.Config) *testBundle {
		t.Helper()
		server := newTestServer(t, opts)
		return &testBundle{server: server, client: newClient(t, cfg), conn: server.connector()}
	}

	byName := func(tools []mcp.Tool) map[string]mcp.Tool {
		m := make(map[string]mcp.Tool, len(tools))
		for _, tool := range tools {
			m[tool.Name] = tool
		}
		return m
	}

	t.Run("ToolsWithRisksFromAnnotations", func(t *testing.T) {
		t.Parallel()

		for _, stateless := range []bool{false, true} {
			t.Run(fmt.Sprintf("Stateless%t", stateless), func(t *testing.T) {
				t.Parallel()
				bundle := setup(t, serverOptions{stateless: stateless}, nil)
				bundle.server.addTool("search", "Search things", objectSchema, &mcpsdk.ToolAnnotations{ReadOnlyHint: true, Title: "Search"}, nil)
				bundle.server.addTool("delete", "Delete a thing", objectSchema, &mcpsdk.ToolAnnotations{DestructiveHint: boolPtr(true)}, nil)
				bundle.server.addTool("both", "Claims both", objectSchema, &mcpsdk.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: boolPtr(true)}, nil)
				bundle.server.addTool("create", "Create a thing", objectSchema, &mcpsdk.ToolAnnotations{DestructiveHint: boolPtr(false)}, nil)
				bundle.server.addTool("plain", "No annotations", objectSchema, nil, nil)

				tools, err := bundle.client.ListTools(ctx, bundle.conn, "")
				require.NoError(t, err)
				require.Len(t, tools, 5)
				got := byName(tools)

				require.Equal(t, executors.TierR1, got["search"].Tier, "read-only: read, R1")
				require.Equal(t, executors.TierR3, got["delete"].Tier, "destructive: danger, R3")
				require.Equal(t, executors.TierR3, got["both"].Tier, "destructiveHint is checked first")
				require.Equal(t, executors.TierR2, got["create"].Tier)
				require.Equal(t, executors.TierR2, got["plain"].Tier, "no annotation: write, R2")

				search := got["search"]
				require.Equal(t, "Search things", search.Description)
				require.Equal(t, "Search", search.Title)
				require.NotNil(t, search.Annotations)
				require.True(t, search.Annotations.ReadOnlyHint)
				require.Nil(t, got["plain"].Annotations)
				require.JSONEq(t, objectSchema, string(search.InputSchema))

				wantHash, err := policy.DefinitionHash(json.RawMessage(objectSchema))
				require.NoError(t, err)
				require.Equal(t, wantHash, search.Hash)
			})
		}
	})

	t.Run("RiskPolicy", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, serverOptions{}, nil)
		bundle.server.addTool("search", "", objectSchema, &mcpsdk.ToolAnnotations{ReadOnlyHint: true}, nil)
		bundle.server.addTool("delete", "", objectSchema, &mcpsdk.ToolAnnotations{DestructiveHint: boolPtr(true)}, nil)
		bundle.server.addTool("plain", "", objectSchema, nil, nil)

		bundle.server.addTool("drop", "", objectSchema, nil, nil)

		bundle.conn.RiskPolicy = mcp.RiskPolicy{
			Default: "read",
			Tools:   map[string]executors.Tier{"delete": "write", "search": "danger", "drop": "r4"},
		}
		tools, err := bundle.client.ListTools(ctx, bundle.conn, "")
		require.NoError(t, err)
		got := byName(tools)
		require.Equal(t, executors.TierR3, got["search"].Tier, "an override beats readOnlyHint")
		require.Equal(t, executors.TierR2, got["delete"].Tier, "an override beats destructiveHint")
		require.Equal(t, executors.TierR1, got["plain"].Tier, "the default applies without annotations")
		require.Equal(t, executors.TierR4, got["drop"].Tier, "tiers are accepted as well as risk words")

		// The policy is applied on every read: a changed policy needs no
		// fresh listing.
		bundle.conn.RiskPolicy = mcp.RiskPolicy{}
		tools, err = bundle.client.ListTools(ctx, bundle.conn, "")
		require.NoError(t, err)
		got = byName(tools)
		require.Equal(t, executors.TierR1, got["search"].Tier)
		require.Equal(t, executors.TierR3, got["delete"].Tier)
		require.Equal(t, executors.TierR2, got["plain"].Tier)
		require.Equal(t, 1, bundle.server.count("tools/list"))
	})

	t.Run("Pagination", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, serverOptions{pageSize: 2}, nil)
		for i := range 7 {
			bundle.server.addTool(fmt.Sprintf("tool_%d", i), "", objectSchema, nil, nil)
		}

		tools, err := bundle.client.ListTools(ctx, bundle.conn, "")
		require.NoError(t, err)
		require.Len(t, tools, 7)
		require.Equal(t, 4, bundle.server.count("tools/list"))
	})

	t.Run("CacheHitAndInvalidate", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, serverOptions{}, nil)
		bundle.server.addTool("search", "", objectSchema, nil, nil)

		_, err := bundle.client.ListTools(ctx, bundle.conn, "")
		require.NoError(t, err)
		require.Equal(t, 1, bundle.server.count("tools/list"))
		requestsAfterFirst := len(bundle.server.recorded())

		tools, err := bundle.client.ListTools(ctx, bundle.conn, "")
		require.NoError(t, err)
		require.Len(t, tools, 1)
		require.Len(t, bundle.server.recorded(), requestsAfterFirst, "a cache hit makes no request at all")

		bundle.client.Invalidate(bundle.conn.ID)
		_, err = bundle.client.ListTools(ctx, bundle.conn, "")
		require.NoError(t, err)
		require.Equal(t, 2, bundle.server.count("tools/list"))

		// Another connector has its own entry.
		other := bundle.server.connector()
		_, err = bundle.client.ListTools(ctx, other, "")
		require.NoError(t, err)
		require.Equal(t, 3, bundle.server.count("tools/list"))
	})

	t.Run("EditedConnectorMisses", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, serverOptions{}, nil)
		bundle.server.addTool("search", "", objectSchema, nil, nil)

		_, err := bundle.client.ListTools(ctx, bundle.conn, "")
		require.NoError(t, err)
		require.Equal(t, 1, bundle.server.count("tools/list"))

		edited := *bundle.conn
		edited.URL = bundle.server.URL + "/"
		_, err = bundle.client.ListTools(ctx, &edited, "")
		require.NoError(t, err)
		require.Equal(t, 2, bundle.server.count("tools/list"), "a changed URL misses")

		edited.Auth = mcp.Auth{Type: mcp.AuthCustomHeader, HeaderName: "X-Api-Key"}
		_, err = bundle.client.ListTools(ctx, &edited, testSecret)
		require.NoError(t, err)
		require.Equal(t, 3, bundle.server.count("tools/list"), "a changed auth scheme misses")

		_, err = bundle.client.ListTools(ctx, &edited, "rotated-"+testSecret)
		require.NoError(t, err)
		require.Equal(t, 3, bundle.server.count("tools/list"), "a rotated secret keeps the cache")
	})

	t.Run("CacheExpires", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, serverOptions{}, &mcp.Config{CacheTTL: 50 * time.Millisecond})
		bundle.server.addTool("search", "", objectSchema, nil, nil)

		_, err := bundle.client.ListTools(ctx, bundle.conn, "")
		require.NoError(t, err)
		time.Sleep(60 * time.Millisecond)
		_, err = bundle.client.ListTools(ctx, bundle.conn, "")
		require.NoError(t, err)
		require.Equal(t, 2, bundle.server.count("tools/list"))
	})

	t.Run("ObservesFetchesNotCacheHits", func(t *testing.T) {
		t.Parallel()
		var mu sync.Mutex
		var observed []error
		bundle := setup(t, serverOptions{}, &mcp.Config{ObserveList: func(d time.Duration, err error) {
			mu.Lock()
			defer mu.Unlock()
			require.Positive(t, d)
			observed = append(observed, err)
		}})
		bundle.server.addTool("search", "", objectSchema, nil, nil)

		for range 2 {
			_, err := bundle.client.ListTools(ctx, bundle.conn, "")
			require.NoError(t, err)
		}
		mu.Lock()
		defer mu.Unlock()
		require.Equal(t, []error{nil}, observed, "one fetch, one cache hit")
	})

	t.Run("ReturnsCopies", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, serverOptions{}, nil)
		bundle.server.addTool("search", "", objectSchema, &mcpsdk.ToolAnnotations{DestructiveHint: boolPtr(false)}, nil)

		tools, err := bundle.client.ListTools(ctx, bundle.conn, "")
		require.NoError(t, err)
		tools[0].InputSchema[0] = 'X'
		tools[0].Name = "changed"
		*tools[0].Annotations.DestructiveHint = true

		tools, err = bundle.client.ListTools(ctx, bundle.conn, "")
		require.NoError(t, err)
		require.Equal(t, "search", tools[0].Name)
		require.JSONEq(t, objectSchema, string(tools[0].InputSchema))
		require.False(t, *tools[0].Annotations.DestructiveHint)
		require.Equal(t, 1, bundle.server.count("tools/list"))
	})

	t.Run("HashTracksSchemaNotDescriptions", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, serverOptions{}, nil)
		list := func() mcp.Tool {
			t.Helper()
			bundle.client.Invalidate(bundle.conn.ID)
			tools, err := bundle.client.ListTools(ctx, bundle.conn, "")
			require.NoError(t, err)
			require.Len(t, tools, 1)
			return tools[0]
		}

		bundle.server.addTool("search", "Search things", objectSchema, nil, nil)
		original := list()

		bundle.server.addTool("search", "Search all the things, now reworded",
			`{"type":"object","properties":{"query":{"type":"string","description":"Reworded","default":"x"}},"required":["query"]}`, nil, nil)
		reworded := list()
		require.Equal(t, "Search all the things, now reworded", reworded.Description)
		require.Equal(t, original.Hash, reworded.Hash, "descriptions and defaults are not drift")

		bundle.server.addTool("search", "Search things",
			`{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer"}},"required":["query"]}`, nil, nil)
		changed := list()
		require.NotEqual(t, original.Hash, changed.Hash, "a new property is drift")

		bundle.server.addTool("search", "Search things", `{"type":"object","properties":{"query":{"type":"number"}},"required":["query"]}`, nil, nil)
		retyped := list()
		require.NotEqual(t, original.Hash, retyped.Hash, "a changed type is drift")
		require.NotEqual(t, changed.Hash, retyped.Hash)
	})

	t.Run("EveryPageWithinTheRequestsOfAnOperation", func(t *testing.T) {
		t.Parallel()
		// The most pages a list may have, each a request, fit in what one
		// operation may send besides its own requests.
		bundle := setup(t, serverOptions{pageSize: 1}, nil)
		for i := range 100 {
			bundle.server.addTool(fmt.Sprintf("tool_%03d", i), "", objectSchema, nil, nil)
		}
		tools, err := bundle.client.ListTools(ctx, bundle.conn, "")
		require.NoError(t, err)
		require.Len(t, tools, 100)
		require.Equal(t, 100, bundle.server.count("tools/list"))

		bundle.client.Invalidate(bundle.conn.ID)
		bundle.server.addTool("tool_100", "", objectSchema, nil, nil)
		_, err = bundle.client.ListTools(ctx, bundle.conn, "")
		require.Equal(t, mcp.CodeProtocolError, requireExecError(t, err).Code, "more than 100 pages")
	})

	t.Run("ListBounded", func(t *testing.T) {
		t.Parallel()

		// A list is kept for its connector: a server listing tools without
		// end, page after page, is refused rather than held in memory.
		many := setup(t, serverOptions{pageSize: 250}, nil)
		for i := range 1000 {
			many.server.addTool(fmt.Sprintf("tool_%04d", i), "", objectSchema, nil, nil)
		}
		tools, err := many.client.ListTools(ctx, many.conn, "")
		require.NoError(t, err)
		require.Len(t, tools, 1000)
		many.client.Invalidate(many.conn.ID)
		many.server.addTool("tool_1000", "", objectSchema, nil, nil)

		// A guard of minutes: 16 MiB through the SDK under the race
		// detector is slow, and the list's timeout is not the subject here.
		large := setup(t, serverOptions{pageSize: 2}, &mcp.Config{ListTimeout: 5 * time.Minute})
		description := strings.Repeat("d", 1<<20)
		for i := range 17 {
			large.server.addTool(fmt.Sprintf("tool_%d", i), description, objectSchema, nil, nil)
		}

		for _, b := range []*testBundle{many, large} {
			_, err := b.client.ListTools(ctx, b.conn, "")
			execErr := requireExecError(t, err)
			require.Equal(t, mcp.CodeResponseTooLarge, execErr.Code)
			require.False(t, execErr.Retryable)
		}
		require.Equal(t, 8, large.server.count("tools/list"), "the pages past the limit are not asked for")
	})

	t.Run("LostSessionRetriedOnce", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, serverOptions{wrap: dropSessionOnce("tools/list")}, nil)
		bundle.server.addTool("search", "", objectSchema, nil, nil)

		tools, err := bundle.client.ListTools(ctx, bundle.conn, "")
		require.NoError(t, err)
		require.Len(t, tools, 1)
		require.Equal(t, 2, bundle.server.count("tools/list"))
		require.Equal(t, 2, bundle.server.count("initialize"), "the retry starts with a fresh initialize")
	})

	t.Run("ServerDown", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, serverOptions{}, nil)
		bundle.server.http.Close()

		_, err := bundle.client.ListTools(ctx, bundle.conn, "")
		execErr := requireExecError(t, err)
		require.Equal(t, mcp.CodeUnreachable, execErr.Code)
		require.True(t, execErr.Retryable)
	})

	// A key in the URL's query is the admin's secret, and an error is
	// stored where the agent reads it: a server naming the request's URL
	// in its error must not put the key there.
	t.Run("KeyInTheURLScrubbed", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t, serverOptions{wrap: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(body))
				if rpcMethod(body) != "tools/list" {
					next.ServeHTTP(w, r)
					return
				}
				var req struct {
					ID json.RawMessage `json:"id"`
				}
				require.NoError(t, json.Unmarshal(body, &req))
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":%q}}`, req.ID, "cannot list for "+r.URL.RequestURI())
			})
		}}, nil)
		bundle.conn.URL += "?api_key=s3cr3t-k3y%2Bplus&v=1"

		_, err := bundle.client.ListTools(ctx, bundle.conn, "")
		execErr := requireExecError(t, err)
		require.Equal(t, mcp.CodeRPCError, execErr.Code)
		require.Contains(t, execErr.Message, "cannot list for /?[REDACTED]", "the server's text is kept")
		require.NotContains(t, execErr.Message, "s3cr3t")
	})

	t.Run("ServerErrorNotCached", func(t *testing.T) {
		t.Parallel()
		var fail atomic.Bool
		fail.Store(true)
		bundle := setup(t, serverOptions{wrap: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if fail.Load() {
					w.Header().Set("Retry-After", "7")
					http.Error(w, "overloaded", http.StatusServiceUnavailable)
					return
				}
				next.ServeHTTP(w, r)
			})
		}}, nil)
		bundle.server.addTool("search", "", objectSchema, nil, nil)

		_, err := bundle.client.ListTools(ctx, bundle.conn, "")
		execErr := requireExecError(t, err)
		require.Equal(t, "http_503", execErr.Code)
		require.True(t, execErr.Retryable)
		require.Equal(t, 7*time.Second, execErr.RetryAfter)

		fail.Store(false)
		tools, err := bundle.client.ListTools(ctx, bundle.conn, "")
		require.NoError(t, err)
		require.Len(t, tools, 1)
	})

	t.Run("Timeout", func(t *testing.T) {
		t.Parallel()
		release := make(chan struct{})
		bundle := setup(t, serverOptions{wrap: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-release:
				case <-r.Context().Done():
				}
			})
		}}, &mcp.Config{ListTimeout: 200 * time.Millisecond})
		t.Cleanup(func() { close(release) })

		start := time.Now()
		_, err := bundle.client.ListTools(ctx, bundle.conn, "")
		execErr := requireExecError(t, err)
		require.Equal(t, mcp.CodeTimeout, execErr.Code)
		require.True(t, execErr.Retryable)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Less(t, time.Since(start), 2*time.Second)
	})

	t.Run("CallerDeadlineWins", func(t *testing.T) {
		t.Parallel()
		release := make(chan struct{})
		bundle := setup(t, serverOptions{wrap: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-release:
				case <-r.Context().Done():
				}
			})
		}}, nil)
		t.Cleanup(func() { close(release) })

		callerCtx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := bundle.client.ListTools(callerCtx, bundle.conn, "")
		execErr := requireExecError(t, err)
		require.Equal(t, mcp.CodeTimeout, execErr.Code)
		require.True(t, execErr.Retryable)
		require.Less(t, time.Since(start), 2*time.Second)

		canceledCtx, cancel := context.WithCancel(ctx)
		cancel()
		_, err = bundle.client.ListTools(canceledCtx, bundle.conn, "")
		execErr = requireExecError(t, err)
		require.Equal(t, mcp.CodeCanceled, execErr.Code)
		require.ErrorIs(t, err, context.Canceled)
	})
}

// dropSessionOnce wraps an MCP handler so that the first POST of method
// carrying a session id finds its session gone, answered 404 as the SDK
// answers for an unknown session.
func dropSessionOnce(method string) func(http.Handler) http.Handler {
	var dropped atomic.Bool
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") != "" {
				body, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(body))
				if rpcMethod(body) == method && dropped.CompareAndSwap(false, true) {
					http.Error(w, "session not found", http.StatusNotFound)
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}

func TestClient_Validate(t *testing.T) {
	t.Parallel()

	ctx := context.Background()

	t.Run("Reachable", func(t *testing.T) {
		t.Parallel()

		for _, stateless := range []bool{false, true} {
			t.Run(fmt.Sprintf("Stateless%t", stateless), func(t *testing.T) {
				t.Parallel()
				server := newTestServer(t, serverOptions{stateless: stateless})
				server.addTool("search", "", objectSchema, nil, nil)
				server.addTool("create", "", objectSchema, nil, nil)
				client := newClient(t, nil)
				conn := server.connector()

				diag := client.Validate(ctx, conn, "")
				require.True(t, diag.Reachable)
				require.Contains(t, mcpsdk.SupportedProtocolVersions(), diag.ProtocolVersion)
				require.Equal(t, "test-server", diag.ServerName)
				require.Equal(t, 2, diag.ToolCount)
				require.Empty(t, diag.Errors)

				// Validate bypasses the cache both ways.
				_ = client.Validate(ctx, conn, "")
				require.Equal(t, 2, server.count("tools/list"))
				_, err := client.ListTools(ctx, conn, "")
				require.NoError(t, err)
				require.Equal(t, 3, server.count("tools/list"))
			})
		}
	})

	t.Run("UnusableSchema", func(t *testing.T) {
		t.Parallel()
		server := newTestServer(t, serverOptions{})
		server.addTool("broken", "", `{"type":"object","properties":{"a":{"type":"no-such-type"}}}`, nil, nil)
		client := newClient(t, nil)

		diag := client.Validate(ctx, server.connector(), "")
		require.True(t, diag.Reachable)
		require.Equal(t, 1, diag.ToolCount)
		require.Len(t, diag.Errors, 1)
		require.Contains(t, diag.Errors[0], `tool "broken"`)
	})

	t.Run("Unreachable", func(t *testing.T) {
		t.Parallel()
		server := newTestServer(t, serverOptions{})
		server.http.Close()
		client := newClient(t, nil)

		diag := client.Validate(ctx, server.connector(), "")
		require.False(t, diag.Reachable)
		require.Zero(t, diag.ToolCount)
		require.Len(t, diag.Errors, 1)
		require.Contains(t, diag.Errors[0], "unreachable")
	})

	t.Run("Unauthorized", func(t *testing.T) {
		t.Parallel()
		server := newTestServer(t, serverOptions{wrap: requireHeader("Authorization", "Bearer right-"+testSecret)})
		client := newClient(t, nil)
		conn := server.connector()
		conn.Auth = mcp.Auth{Type: mcp.AuthBearer}

		diag := client.Validate(ctx, conn, testSecret)
		require.False(t, diag.Reachable)
		require.Len(t, diag.Errors, 1)
		require.Contains(t, diag.Errors[0], "401")
		require.NotContains(t, diag.Errors[0], testSecret)
	})

	t.Run("URLRefused", func(t *testing.T) {
		t.Parallel()
		client, err := mcp.New(nil)
		require.NoError(t, err)

		diag := client.Validate(ctx, &mcp.Connector{URL: "http://169.254.169.254/latest"}, "")
		require.False(t, diag.Reachable)
		require.Len(t, diag.Errors, 1)
		require.Contains(t, diag.Errors[0], mcp.CodeURLNotAllowed)
	})
}

// requireHeader wraps an MCP handler so requests without the header value
// get 401, with a body echoing the header as some servers do.
func requireHeader(name, value string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if got := r.Header.Get(name); got != value {
				http.Error(w, fmt.Sprintf("bad credential %q", got), http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
