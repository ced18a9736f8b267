package mcp

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"runtime/debug"
	"sync"
	"time"

	"github.com/google/uuid"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/platform/netguard"
	"github.com/outboxd/outboxd/internal/platform/tracing"
	"github.com/outboxd/outboxd/policy"
)

const (
	// DefaultListTimeout bounds one tools/list, pages and connecting included.
	DefaultListTimeout = 15 * time.Second
	// DefaultCallTimeout bounds one tools/call, connecting included.
	DefaultCallTimeout = 30 * time.Second
	// DefaultCacheTTL is how long a connector's tool list is reused.
	DefaultCacheTTL = 5 * time.Minute

	// maxToolPages bounds tools/list pagination, so a server handing out
	// cursors forever cannot keep a listing going until its deadline.
	maxToolPages = 100

	// maxTools bounds how many tools a connector may list, and
	// maxToolBytes the size of their definitions all together (names,
	// titles, descriptions and schemas): a list is kept in memory for its
	// connector and copied on every read of it, and a server listing tools
	// without end (maxToolPages pages of maxResponseBytes) would otherwise
	// hold gigabytes of the process every organization's calls run in.
	maxTools     = 1000
	maxToolBytes = maxResponseBytes

	// maxCacheEntries is the cache size past which expired entries are
	// swept, so deleted connectors do not accumulate.
	maxCacheEntries = 1024

	// maxCacheBytes bounds the size (Tool.size) of every cached list
	// together: lists are kept for every organization's connectors in one
	// process, and an organization may add many connectors, each listing
	// up to maxToolBytes. A list that finds no room, once expired lists are
	// swept, is served without being kept.
	maxCacheBytes = 256 << 20

	clientName = "outboxd"
)

// Config configures a Client.
type Config struct {
	// ListTimeout bounds listing a connector's tools: connecting, every page
	// of tools/list, and one retry after a lost session. Defaults to
	// DefaultListTimeout (15s). A shorter caller deadline wins.
	ListTimeout time.Duration

	// CallTimeout bounds one tool call: connecting, tools/call, and one
	// retry after a lost session. Defaults to DefaultCallTimeout (30s). A
	// shorter caller deadline wins.
	CallTimeout time.Duration

	// CacheTTL is how long a connector's tool list is served from memory.
	// Defaults to DefaultCacheTTL (5m).
	CacheTTL time.Duration

	// AllowPrivateNetworks lets connectors reach loopback, private,
	// link-local and other internal addresses, cloud metadata endpoints
	// included. Defaults to false, where such addresses are refused at dial
	// time (after DNS resolution and on redirects) and proxies are not used.
	// Only tests and single-tenant deployments should set it.
	AllowPrivateNetworks bool

	// ObserveList, when set, is called after every tools/list fetch that
	// missed the cache, with its duration and error (outboxd feeds
	// outboxd_connector_list_duration_seconds with it). Default: none.
	ObserveList func(d time.Duration, err error)

	// HTTPClient is the base for requests to connectors. Its Transport, when
	// set, must be an *http.Transport unless AllowPrivateNetworks is set: it
	// is cloned with the private network guard in its dialer. Its
	// CheckRedirect and Timeout are not used. Defaults to a client with its
	// own pooled transport.
	HTTPClient *http.Client
}

// WithDefaults returns a copy of c with unset fields filled in.
func (c *Config) WithDefaults() *Config {
	if c == nil {
		c = &Config{}
	}
	return &Config{
		ListTimeout:          cmp.Or(c.ListTimeout, DefaultListTimeout),
		CallTimeout:          cmp.Or(c.CallTimeout, DefaultCallTimeout),
		CacheTTL:             cmp.Or(c.CacheTTL, DefaultCacheTTL),
		AllowPrivateNetworks: c.AllowPrivateNetworks,
		ObserveList:          c.ObserveList,
		HTTPClient:           cmp.Or(c.HTTPClient, &http.Client{}),
	}
}

func (c *Config) validate() error {
	switch {
	case c.ListTimeout < 0:
		return errors.New("mcp: ListTimeout must not be negative")
	case c.CallTimeout < 0:
		return errors.New("mcp: CallTimeout must not be negative")
	case c.CacheTTL < 0:
		return errors.New("mcp: CacheTTL must not be negative")
	}
	return nil
}

// Client lists and calls the tools of MCP connectors over the streamable
// HTTP transport. Every list or call opens a fresh session and closes it
// afterwards, so nothing is held per connector but cached tool lists. It is
// safe for concurrent use.
type Client struct {
	listTimeout  time.Duration
	callTimeout  time.Duration
	cacheTTL     time.Duration
	allowPrivate bool
	observeList  func(time.Duration, error)
	transport    http.RoundTripper
	impl         *mcpsdk.Implementation
	validator    *executors.Validator

	mu    sync.Mutex
	cache map[uuid.UUID]cacheEntry
	// cacheBytes is the size of the cached lists; maxCacheBytes bounds it
	// (a field, so tests can lower it).
	cacheBytes, maxCacheBytes int
}

// CheckConnector is the package's CheckConnector with this client's own
// private-network setting, so what is saved is what the client will reach.
func (c *Client) CheckConnector(conn *Connector) error {
	return CheckConnector(conn, c.allowPrivate)
}

// cacheEntry is a connector's tool list as fetched. Tiers are derived on
// every read, so a changed risk policy applies at once.
type cacheEntry struct {
	key     string
	tools   []Tool
	expires time.Time
	size    int
}

// New returns a Client. A nil cfg uses the defaults.
func New(cfg *Config) (*Client, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	transport, err := guardedTransport(cfg.HTTPClient, cfg.AllowPrivateNetworks)
	if err != nil {
		return nil, err
	}
	return &Client{
		listTimeout:   cfg.ListTimeout,
		callTimeout:   cfg.CallTimeout,
		cacheTTL:      cfg.CacheTTL,
		allowPrivate:  cfg.AllowPrivateNetworks,
		observeList:   cfg.ObserveList,
		transport:     transport,
		impl:          &mcpsdk.Implementation{Name: clientName, Version: moduleVersion()},
		validator:     executors.NewValidator(),
		cache:         make(map[uuid.UUID]cacheEntry),
		maxCacheBytes: maxCacheBytes,
	}, nil
}

// guardedTransport returns the transport connectors are reached through:
// base's transport (a transport of connectors' own when there is none),
// guarded by netguard.Guard unless allowPrivate.
func guardedTransport(base *http.Client, allowPrivate bool) (http.RoundTripper, error) {
	var rt http.RoundTripper
	if base != nil {
		rt = base.Transport
	}
	if rt == nil {
		rt = netguard.NewTransport()
	}
	if allowPrivate {
		return rt, nil
	}
	tr, ok := rt.(*http.Transport)
	if !ok {
		return nil, fmt.Errorf("mcp: HTTPClient.Transport is a %T; the private network guard needs an *http.Transport (or set AllowPrivateNetworks)", rt)
	}
	return netguard.Guard(tr), nil
}

// moduleVersion is the version outboxd reports to MCP servers.
func moduleVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}

// CloseIdleConnections closes idle connections to connectors, for shutdown.
func (c *Client) CloseIdleConnections() {
	if ci, ok := c.transport.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// ListTools returns the tools conn's server offers, from the cache when a
// list for the same URL and auth scheme was fetched within the cache TTL.
// secret is the resolved connector secret; it is only needed on a miss.
// Failures are *executors.Error (reachable with errors.As) and never
// contain secret.
func (c *Client) ListTools(ctx context.Context, conn *Connector, secret string) ([]Tool, error) {
	key := conn.cacheKey()
	if tools, ok := c.cached(conn.ID, key); ok {
		return withTiers(tools, conn.RiskPolicy), nil
	}

	var tools []Tool
	begin := time.Now()
	err := c.withSession(ctx, conn, secret, c.listTimeout, "listing tools", func(ctx context.Context, cs *mcpsdk.ClientSession) error {
		var err error
		tools, err = fetchTools(ctx, cs)
		return err
	})
	if c.observeList != nil {
		c.observeList(time.Since(begin), err)
	}
	if err != nil {
		return nil, err
	}
	c.store(conn.ID, key, tools)
	return withTiers(tools, conn.RiskPolicy), nil
}

// Invalidate drops the cached tool list of a connector, for when it is
// edited or deleted or its tools were reviewed.
func (c *Client) Invalidate(connectorID uuid.UUID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drop(connectorID)
}

// drop removes id's entry, if any. c.mu must be held.
func (c *Client) drop(id uuid.UUID) {
	if entry, ok := c.cache[id]; ok {
		c.cacheBytes -= entry.size
		delete(c.cache, id)
	}
}

func (c *Client) cached(id uuid.UUID, key string) ([]Tool, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	entry, ok := c.cache[id]
	if !ok || entry.key != key || !time.Now().Before(entry.expires) {
		return nil, false
	}
	return entry.tools, true
}

func (c *Client) store(id uuid.UUID, key string, tools []Tool) {
	size := 0
	for _, t := range tools {
		size += t.size()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	c.drop(id)
	if len(c.cache) >= maxCacheEntries || c.cacheBytes+size > c.maxCacheBytes {
		for id, entry := range c.cache {
			if !now.Before(entry.expires) {
				c.drop(id)
			}
		}
	}
	if c.cacheBytes+size > c.maxCacheBytes {
		return
	}
	c.cache[id] = cacheEntry{key: key, tools: tools, expires: now.Add(c.cacheTTL), size: size}
	c.cacheBytes += size
}

// withTiers returns copies of tools with tiers derived under policy.
// Cached tools are never handed out, so callers may modify what they get.
func withTiers(tools []Tool, policy RiskPolicy) []Tool {
	out := make([]Tool, len(tools))
	for i, t := range tools {
		out[i] = t.clone()
		out[i].Tier = deriveTier(t.Name, t.Annotations, policy)
	}
	return out
}

// errToolListTooLarge is the failure of a tool list past maxTools or
// maxToolBytes.
var errToolListTooLarge = fmt.Errorf("the MCP server lists more than %d tools or more than %d bytes of tool definitions", maxTools, maxToolBytes)

// fetchTools lists every page of tools. Of tools sharing a name, the first
// is kept: a name is an action id and must be unambiguous. A list past
// maxTools or maxToolBytes fails with errToolListTooLarge.
func fetchTools(ctx context.Context, cs *mcpsdk.ClientSession) ([]Tool, error) {
	var tools []Tool
	size := 0
	seen := make(map[string]bool)
	params := &mcpsdk.ListToolsParams{}
	for page := 0; ; page++ {
		if page == maxToolPages {
			return nil, fmt.Errorf("tools/list returned more than %d pages", maxToolPages)
		}
		res, err := cs.ListTools(ctx, params)
		if err != nil {
			return nil, err
		}
		for _, t := range res.Tools {
			if t == nil || t.Name == "" || seen[t.Name] {
				continue
			}
			tool, err := convertTool(t)
			if err != nil {
				return nil, err
			}
			seen[t.Name] = true
			tools = append(tools, tool)
			size += tool.size()
			if len(tools) > maxTools || size > maxToolBytes {
				return nil, errToolListTooLarge
			}
		}
		if res.NextCursor == "" {
			return tools, nil
		}
		if res.NextCursor == params.Cursor {
			return nil, errors.New("tools/list returned the same cursor twice")
		}
		params = &mcpsdk.ListToolsParams{Cursor: res.NextCursor}
	}
}

// convertTool converts a tool as the SDK decoded it.
func convertTool(t *mcpsdk.Tool) (Tool, error) {
	schema := json.RawMessage(`{"type":"object"}`)
	if t.InputSchema != nil {
		var err error
		if schema, err = json.Marshal(t.InputSchema); err != nil {
			return Tool{}, fmt.Errorf("encoding the input schema of tool %q: %w", t.Name, err)
		}
	}
	hash, err := policy.DefinitionHash(schema)
	if err != nil {
		return Tool{}, fmt.Errorf("hashing the input schema of tool %q: %w", t.Name, err)
	}
	tool := Tool{
		Name:        t.Name,
		Title:       t.Title,
		Description: t.Description,
		InputSchema: schema,
		Hash:        hash,
	}
	if t.OutputSchema != nil {
		if tool.OutputSchema, err = json.Marshal(t.OutputSchema); err != nil {
			return Tool{}, fmt.Errorf("encoding the output schema of tool %q: %w", t.Name, err)
		}
	}
	if a := t.Annotations; a != nil {
		tool.Annotations = &Annotations{
			Title:           a.Title,
			ReadOnlyHint:    a.ReadOnlyHint,
			DestructiveHint: a.DestructiveHint,
			IdempotentHint:  a.IdempotentHint,
			OpenWorldHint:   a.OpenWorldHint,
		}
		if tool.Title == "" {
			tool.Title = a.Title
		}
	}
	return tool, nil
}

// Diagnostics is what Validate learned about a connector.
type Diagnostics struct {
	// Reachable is true when an MCP session could be initialized.
	Reachable bool
	// ProtocolVersion is the MCP protocol version negotiated.
	ProtocolVersion string
	// ServerName is the name the server reported.
	ServerName string
	// ToolCount is the number of tools listed.
	ToolCount int
	// Errors lists what went wrong, free of the secret. Empty means the
	// connector is usable.
	Errors []string
}

// Validate connects to conn's server, lists its tools and checks that their
// schemas compile, bypassing the cache and storing nothing. Every problem
// found is reported in Diagnostics.Errors.
func (c *Client) Validate(ctx context.Context, conn *Connector, secret string) Diagnostics {
	diag := Diagnostics{Errors: []string{}}
	var tools []Tool
	err := c.withSession(ctx, conn, secret, c.listTimeout, "listing tools", func(ctx context.Context, cs *mcpsdk.ClientSession) error {
		diag.Reachable = true
		if res := cs.InitializeResult(); res != nil {
			diag.ProtocolVersion = res.ProtocolVersion
			if res.ServerInfo != nil {
				diag.ServerName = res.ServerInfo.Name
			}
		}
		var err error
		tools, err = fetchTools(ctx, cs)
		return err
	})
	if err != nil {
		diag.Errors = append(diag.Errors, err.Error())
		return diag
	}

	diag.ToolCount = len(tools)
	for _, t := range tools {
		if _, err := c.validator.Validate(t.InputSchema, json.RawMessage(`{}`)); err != nil {
			diag.Errors = append(diag.Errors, newScrubber(conn, secret).scrub(fmt.Sprintf("tool %q: the input schema is unusable: %v", t.Name, err)))
		}
	}
	return diag
}

// withSession runs fn in a fresh MCP session with conn's server, under a
// deadline of timeout, and closes the session. A session the server lost
// (HTTP 404 to a request carrying its id) is retried once with a fresh
// initialize. Failures come back classified and scrubbed of secret.
func (c *Client) withSession(ctx context.Context, conn *Connector, secret string, timeout time.Duration, what string, fn func(context.Context, *mcpsdk.ClientSession) error) error {
	s := newScrubber(conn, secret)
	if err := netguard.CheckURL(conn.URL, c.allowPrivate); err != nil {
		return s.errorf(CodeURLNotAllowed, false, nil, "%s: %v", what, err)
	}
	// The risk policy is not checked: invalid values in it are ignored by
	// deriveTier and must not make the connector unusable.
	if err := checkAuth(conn.Auth); err != nil {
		return s.errorf(CodeInvalidConnector, false, nil, "%s: %v", what, err)
	}
	if err := checkSecret(conn, secret); err != nil {
		return s.errorf(CodeInvalidConnector, false, nil, "%s: %v", what, err)
	}
	origin, err := url.Parse(conn.URL)
	if err != nil {
		return s.errorf(CodeURLNotAllowed, false, nil, "%s: %v", what, err)
	}

	opCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	for try := 0; ; try++ {
		a := &attempt{ctx: opCtx, base: c.transport, origin: origin}
		if header := conn.authHeader(); header != "" {
			a.header, a.secret = header, conn.authValue(secret)
		}
		out, err := c.runSession(opCtx, conn.URL, a, fn)
		if err == nil {
			return nil
		}
		if try == 0 && opCtx.Err() == nil && (out.sessionLost || errors.Is(err, mcpsdk.ErrSessionMissing)) {
			continue
		}
		return classify(ctx, opCtx, err, out, s, what, timeout)
	}
}

// runSession makes one attempt: connect, run fn, close. The outcome is
// frozen when connect or fn returns, before closing adds requests of its
// own.
func (c *Client) runSession(ctx context.Context, endpoint string, a *attempt, fn func(context.Context, *mcpsdk.ClientSession) error) (outcome, error) {
	transport := &mcpsdk.StreamableClientTransport{
		Endpoint: endpoint,
		HTTPClient: &http.Client{
			// A call made inside a trace carries its traceparent.
			Transport:     tracing.Transport(a),
			CheckRedirect: netguard.CheckRedirect(c.allowPrivate),
		},
		// The River worker retries whole invocations; a stream resumed
		// behind its back would only blur what happened.
		MaxRetries: -1,
		// Nothing is expected from the server outside the answers to our
		// own requests, and a standing GET would outlive short sessions.
		DisableStandaloneSSE: true,
	}
	client := mcpsdk.NewClient(c.impl, &mcpsdk.ClientOptions{Capabilities: &mcpsdk.ClientCapabilities{}})

	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return a.freeze(), err
	}
	err = fn(ctx, cs)
	out := a.freeze()
	// Closing ends the server's session; its failure changes nothing for
	// the operation, which already completed or failed.
	_ = cs.Close()
	return out, err
}
