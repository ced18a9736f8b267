// Package mcpfront is outboxd's MCP front door: an agent that speaks the
// Model Context Protocol points its client at /mcp and gets its catalog as
// tools, and each tools/call goes through the same outbox as the REST
// invoke (policy modes, drift guard, the sources claim, the invoke rate
// limit, approvals, exactly-once execution by the workers). It is built on
// the official Go SDK's server (Streamable HTTP, stateless), and like the
// REST API it only writes: the outbox records the invocation and its job,
// and waits for the worker like a REST invoke does.
//
// The HTTP layer (internal/api) authenticates the request and hands the
// caller's claims to ServeMCP.
package mcpfront

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	outboxauth "github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/catalog"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/platform/telemetry"
	"github.com/outboxd/outboxd/outbox"
	"github.com/outboxd/outboxd/policy"
)

// Outbox records and runs invocations: the outbox service.
type Outbox interface {
	Invoke(ctx context.Context, p *outbox.InvokeParams) (invocation.Invocation, error)
	Wait(ctx context.Context, inv invocation.Invocation, d time.Duration) (invocation.Invocation, error)
	GetInSession(ctx context.Context, org, sessionID, id string) (invocation.Invocation, error)
	Enqueue(ctx context.Context, p *outbox.EnqueueParams) (inv invocation.Invocation, created bool, err error)
	GetEnvelope(ctx context.Context, org string, id string) (invocation.Invocation, error)
	Cancel(ctx context.Context, org, id, by string) (invocation.Invocation, error)
}

// Catalog says what a caller may use: catalog.Reader.
type Catalog interface {
	Available(ctx context.Context, c *catalog.Caller) (*catalog.Listing, error)
	Guide(ctx context.Context, c *catalog.Caller, integration string) (string, error)
}

// Deps are the front door's collaborators.
type Deps struct {
	Outbox  Outbox
	Catalog Catalog
	Metrics *telemetry.Metrics
	Logger  *slog.Logger
	// Wait bounds how long a call that needs approval waits for the
	// decision and the result (the outbox's sync_wait).
	Wait time.Duration
	// PageSize is how many tools one tools/list page holds; default 100.
	PageSize int
}

// Server serves MCP on one handler.
type Server struct {
	outbox   Outbox
	catalog  Catalog
	metrics  *telemetry.Metrics
	logger   *slog.Logger
	wait     time.Duration
	pageSize int
	handler  http.Handler
}

// New returns the front door.
func New(deps *Deps) *Server {
	s := &Server{outbox: deps.Outbox, catalog: deps.Catalog, metrics: deps.Metrics, wait: deps.Wait, pageSize: cmp.Or(deps.PageSize, 100), logger: cmp.Or(deps.Logger, slog.New(slog.DiscardHandler))}
	if s.metrics == nil {
		s.metrics = telemetry.NewNop()
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "outboxd", Title: "outboxd"}, &mcp.ServerOptions{
		Instructions: instructions,
		Logger:       s.logger,
		// The tools are the caller's catalog, listed and called by the
		// middleware below rather than registered once for everyone.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Resources: &mcp.ResourceCapabilities{}},
	})
	srv.AddReceivingMiddleware(s.middleware)
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		// No session lives in one process: any API process serves any
		// request, as the REST API does.
		Stateless: true,
		Logger:    s.logger,
		// A client that cancels a call (2026-07-28: by ending its request)
		// ends its wait, and withdraws the invocation (callTool).
		PropagateRequestCancellation: true,
	})
	// The SDK hands a request's token information to the handlers; the
	// claims were verified by the HTTP layer, so this only moves them.
	s.handler = auth.RequireBearerToken(func(ctx context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		c, ok := claimsFrom(r.Context())
		if !ok {
			return nil, fmt.Errorf("%w: no verified claims", auth.ErrInvalidToken)
		}
		info := &auth.TokenInfo{UserID: c.Org + "/" + c.Subject, Extra: map[string]any{claimsKey: c}}
		if c.ExpiresAt != nil {
			info.Expiration = c.ExpiresAt.Time
		} else {
			info.Expiration = time.Now().Add(time.Minute)
		}
		return info, nil
	}, nil)(streamable)
	return s
}

// instructions tell the model what the server is.
const instructions = `outboxd runs actions on external services (Slack, Linear, Sentry, GitHub, ` +
	`MCP connectors, databases, plugins) for you, after checking policy. A tool ` +
	`whose description says a human must approve it waits for that approval; ` +
	`if the wait ends first, its result says the invocation is pending, and ` +
	`outboxd_wait with its invocation_id waits again. Calling ` +
	`a tool again after a lost answer never runs it twice when you pass the same ` +
	`idempotency key in the request's _meta ("idempotency_key").`

// ServeMCP serves /mcp to c, whose token (still in the request's
// Authorization header) the HTTP layer verified.
func (s *Server) ServeMCP(w http.ResponseWriter, r *http.Request, c *outboxauth.Claims) {
	s.handler.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), claimsCtxKey{}, c)))
}

type claimsCtxKey struct{}

// claimsKey is where the claims travel in the SDK's token information.
const claimsKey = "outboxd_claims"

func claimsFrom(ctx context.Context) (*outboxauth.Claims, bool) {
	c, ok := ctx.Value(claimsCtxKey{}).(*outboxauth.Claims)
	return c, ok
}

// callerOf returns the claims the request's token information carries.
func callerOf(req mcp.Request) (*outboxauth.Claims, error) {
	if extra := req.GetExtra(); extra != nil && extra.TokenInfo != nil {
		if c, ok := extra.TokenInfo.Extra[claimsKey].(*outboxauth.Claims); ok {
			return c, nil
		}
	}
	return nil, fmt.Errorf("the request carries no verified token")
}

// middleware serves tools/list and tools/call from the caller's catalog,
// resources/list and resources/read from its guides, and passes every
// other method to the SDK.
func (s *Server) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "resources/list":
			c, err := callerOf(req)
			if err != nil {
				return nil, err
			}
			return s.listGuides(ctx, c)
		case "resources/read":
			c, err := callerOf(req)
			if err != nil {
				return nil, err
			}
			return s.readGuide(ctx, c, req.GetParams().(*mcp.ReadResourceParams))
		case "tools/list":
			c, err := callerOf(req)
			if err != nil {
				return nil, err
			}
			return s.listTools(ctx, c, req.GetParams().(*mcp.ListToolsParams))
		case "tools/call":
			c, err := callerOf(req)
			if err != nil {
				return nil, err
			}
			call := req.(*mcp.CallToolRequest)
			res, err := s.callTool(ctx, c, call.Params, s.progress(call))
			if err != nil {
				s.metrics.MCPCalls.WithLabelValues("invalid").Inc()
			}
			return res, err
		}
		return next(ctx, method, req)
	}
}

// tool is one action of the caller's catalog as an MCP tool.
type tool struct {
	name   string
	action catalog.AvailableAction
	source string // the source's display name
}

// tools lists the caller's catalog as tools, in the catalog's order, with
// deny-mode actions kept (callers of listTools leave them out; a call of
// one is answered with the denial).
func (s *Server) tools(ctx context.Context, c *outboxauth.Claims) ([]tool, error) {
	listing, err := s.catalog.Available(ctx, caller(c))
	if err != nil {
		return nil, err
	}
	names := make(map[string]string, len(listing.Sources))
	for _, st := range listing.Sources {
		names[st.Source] = cmp.Or(st.Name, st.Source)
	}
	out := make([]tool, 0, len(listing.Actions))
	for _, a := range listing.Actions {
		out = append(out, tool{name: ToolName(a.Source, a.Action), action: a, source: names[a.Source]})
	}
	return out, nil
}

// ToolName is the MCP tool name of a source's action: "<source>.<action>"
// with every character MCP does not allow in a name (anything but
// letters, digits, "_", "-" and ".") replaced by "_", so the connector
// "connector:3f…" gives "connector_3f….<tool>". Calls map a name back
// through the caller's catalog, never by parsing it.
func ToolName(source, action string) string {
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			switch {
			case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
				return r
			}
			return '_'
		}, s)
	}
	name := clean(source) + "." + clean(action)
	if len(name) > 128 {
		name = name[:128]
	}
	return name
}

// listTools is tools/list: the caller's catalog without its deny-mode
// actions, a page at a time (the cursor is the next page's offset).
func (s *Server) listTools(ctx context.Context, c *outboxauth.Claims, p *mcp.ListToolsParams) (*mcp.ListToolsResult, error) {
	start := 0
	if p != nil && p.Cursor != "" {
		n, err := strconv.Atoi(p.Cursor)
		if err != nil || n < 0 {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "cursor: not a cursor this server gave"}
		}
		start = n
	}
	tools, err := s.tools(ctx, c)
	if err != nil {
		return nil, err
	}
	all := []*mcp.Tool{}
	seen := map[string]bool{}
	for _, t := range tools {
		if t.action.Mode == policy.ModeDeny || t.action.Disabled || seen[t.name] {
			continue
		}
		seen[t.name] = true
		all = append(all, describe(t))
	}
	all = append(all, waitTool)
	out := &mcp.ListToolsResult{Tools: all[min(start, len(all)):min(start+s.pageSize, len(all))]}
	if start+s.pageSize < len(all) {
		out.NextCursor = strconv.Itoa(start + s.pageSize)
	}
	return out, nil
}

// describe renders a catalog action as an MCP tool.
func describe(t tool) *mcp.Tool {
	a := t.action
	var how string
	switch a.Mode {
	case policy.ModeRequireApproval:
		how = "A human must approve each call before it runs; the call waits for the decision."
	default:
		how = "Runs at once."
	}
	title := t.source + ": " + a.Action
	annotations := &mcp.ToolAnnotations{
		Title:          title,
		ReadOnlyHint:   a.RiskTier == policy.TierR0 || a.RiskTier == policy.TierR1,
		IdempotentHint: a.Delivery == "exactly_once",
	}
	if a.RiskTier == policy.TierR3 || a.RiskTier == policy.TierR4 {
		destructive := true
		annotations.DestructiveHint = &destructive
	}
	return &mcp.Tool{
		Name:        t.name,
		Title:       title,
		Description: strings.TrimSpace(fmt.Sprintf("%s\n\nRisk tier %s (%s). %s", strings.TrimSpace(a.Description), a.RiskTier, a.RiskLevel, how)),
		InputSchema: a.Params,
		Annotations: annotations,
	}
}

// progressFunc reports a waiting call's progress to its client, when the
// client asked for it with a progress token.
type progressFunc struct {
	session *mcp.ServerSession
	token   any
	header  http.Header
	logger  *slog.Logger
}

// progress returns the progress reporter of a tools/call request.
func (s *Server) progress(req *mcp.CallToolRequest) progressFunc {
	p := progressFunc{session: req.Session, logger: s.logger}
	if req.Params != nil {
		p.token = req.Params.GetProgressToken()
	}
	if req.Extra != nil {
		p.header = req.Extra.Header
	}
	return p
}

// send sends step's progress notification; without a token it does
// nothing. A client gone is the wait's own business: it ends with ctx.
func (p progressFunc) send(ctx context.Context, step int, message string) {
	if p.token == nil || p.session == nil {
		return
	}
	if err := p.session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: p.token, Progress: float64(step), Message: message}); err != nil {
		p.logger.Debug("mcp progress", "error", err)
	}
}
