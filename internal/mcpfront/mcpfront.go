// Package mcpfront is outboxd's MCP front door: an agent that speaks the
// Model Context Protocol points its client at /mcp and gets its catalog as
// tools, and each tools/call goes through the same outbox as the REST
// invoke (policy modes, drift guard, the sources claim, the invoke rate
// limit, approvals, exactly-once execution by the workers). It is built on
// the official Go SDK's server (Streamable HTTP: a session for a
// 2025-11-25 client, none for a 2026-07-28 one), and like the REST API it
// only writes: the outbox records the invocation and its job, and waits
// for the worker like a REST invoke does.
//
// The HTTP layer (internal/api) authenticates the request and hands the
// caller's claims to ServeMCP. This file has the server and the methods it
// serves itself; tools.go the catalog as tools, call.go tools/call and
// its wait, guides.go the guides as resources, edits.go what a call says
// of a human's edits, sessions.go the tool list's change notifications,
// and limit.go the sessions an organization may keep open.
package mcpfront

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/outboxd/outboxd/internal/domain/approvers"
	outboxauth "github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/catalog"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/internal/platform/telemetry"
	"github.com/outboxd/outboxd/outbox"
)

// Outbox records and runs invocations: the outbox service.
type Outbox interface {
	Invoke(ctx context.Context, p *outbox.InvokeParams) (invocation.Invocation, error)
	Wait(ctx context.Context, inv invocation.Invocation, d time.Duration) (invocation.Invocation, error)
	// Watch subscribes to the end of an invocation before it is created.
	Watch(ctx context.Context, org string) *outbox.Watch
	// GetInSession and GetEnvelope take the token's sources claim: an
	// invocation of another source is not found.
	GetInSession(ctx context.Context, org, sessionID, id string, sources outboxauth.SourceClaim) (invocation.Invocation, error)
	Enqueue(ctx context.Context, p *outbox.EnqueueParams) (inv invocation.Invocation, created bool, err error)
	GetEnvelope(ctx context.Context, org string, id string, sources outboxauth.SourceClaim) (invocation.Invocation, error)
	// Withdraw cancels the invocation of a call its client cancelled,
	// unless another call waits on it (Waits) in any API process.
	Withdraw(ctx context.Context, org, id, by string) (withdrawn bool, err error)
}

// Waits records a call waiting on an invocation it did not create, until
// done, where Withdraw in any API process sees it: waits.Registry.
type Waits interface {
	Start(ctx context.Context, org string, id uuid.UUID) (done func(), err error)
}

// Catalog says what a caller may use: catalog.Reader.
type Catalog interface {
	Available(ctx context.Context, c *catalog.Caller) (*catalog.Listing, error)
	Guide(ctx context.Context, c *catalog.Caller, integration string) (string, error)
}

// Config tunes the front door (mcp.* in the configuration file).
type Config struct {
	// Stateless serves each request on its own and keeps no MCP session
	// (default false). A 2025-11-25 client then gets no stream for
	// notifications/tools/list_changed, and its notifications/cancelled
	// cannot reach the call it cancels; set it when several API processes
	// sit behind a balancer that does not route by Mcp-Session-Id.
	// 2026-07-28 clients keep no session either way.
	Stateless bool
	// SessionTimeout closes a session that has had no request for this
	// long (default 30m); its client starts a new one.
	SessionTimeout time.Duration
	// MaxSessions is how many sessions one organization may keep open in
	// this process (default 1000; the daemon derives it with
	// DefaultMaxSessions): a new one past it closes the organization's
	// session idle longest, or is refused while each has a request in
	// flight (sessionLimit).
	MaxSessions int
	// Recheck is how often the tool lists of connected clients are read
	// again with no change announced (default 1m), to notice what no table
	// records: a connector's server changing its tools.
	Recheck time.Duration
}

// DefaultMaxSessions is MaxSessions derived from the requests one
// organization may have in progress in the process (http.max_org_requests):
// half of them, at most 1000. A 2025-11-25 client keeps a GET stream open
// in its session, which counts as one of those requests for as long as it
// lasts; past that share the organization's next requests, its calls
// included, would be refused with 429. Half leaves the other half for
// calls, and a session past the limit closes one idle instead.
func DefaultMaxSessions(maxOrgRequests int) int { return min(1000, max(1, maxOrgRequests/2)) }

// WithDefaults returns c with its zero fields at their defaults.
func (c Config) WithDefaults() Config {
	c.SessionTimeout = cmp.Or(c.SessionTimeout, 30*time.Minute)
	c.MaxSessions = cmp.Or(c.MaxSessions, 1000)
	c.Recheck = cmp.Or(c.Recheck, time.Minute)
	return c
}

// Deps are the front door's collaborators.
type Deps struct {
	Outbox Outbox
	// Waits records the calls that wait on an invocation they did not
	// create (a retry with the same idempotency key, outboxd_wait).
	Waits   Waits
	Catalog Catalog
	// Changes, when set, tells the front door when an organization's
	// catalog changed, and it tells the connected clients whose tool list
	// changed (notifications/tools/list_changed).
	Changes Changes
	Config  Config
	Metrics *telemetry.Metrics
	Logger  *slog.Logger
	// Wait bounds how long a call that needs approval waits for the
	// decision and the result (the outbox's sync_wait).
	Wait time.Duration
	// PageSize is how many tools one tools/list page holds; default 100.
	PageSize int
	// Approvals, when set, lets a waiting call say how many more
	// approvals it waits for (internal/domain/approvers).
	Approvals Approvals
	// TokenEnds, when set, bounds a subscriptions/listen request (2026-07-28,
	// open as long as the client listens) by its token: revoked or expired,
	// it ends (revocation.Ends), as a 2025-11-25 session's stream does.
	TokenEnds func(ctx context.Context, c *outboxauth.Claims) (context.Context, func())
}

// Approvals reads where a pending invocation's approvals stand.
type Approvals interface {
	ProgressOf(ctx context.Context, db dbutil.DB, inv *invocation.Invocation) (*approvers.Progress, error)
}

// Server serves MCP on one handler.
type Server struct {
	outbox Outbox
	waits  Waits

	catalog  Catalog
	metrics  *telemetry.Metrics
	logger   *slog.Logger
	wait     time.Duration
	pageSize int
	// approvals is nil without Deps.Approvals.
	approvals Approvals
	tokenEnds func(context.Context, *outboxauth.Claims) (context.Context, func())
	handler   http.Handler
	// send sends a message to a session's client: the SDK's own sending
	// handler, which takes the session from the request.
	send mcp.MethodHandler
	// watchers is nil without Deps.Changes.
	watchers *watchers
	sessions *sessionLimit
	// draining ends when the server shuts down (Close): waiting calls
	// then answer where their invocation stands (await).
	draining    context.Context
	stopWaiting context.CancelFunc
}

// closeGrace bounds how long Close waits for the sessions' requests in
// flight to be answered before it closes the sessions.
const closeGrace = 5 * time.Second

// New returns the front door.
func New(deps *Deps) *Server {
	s := &Server{outbox: deps.Outbox, waits: deps.Waits, catalog: deps.Catalog, metrics: deps.Metrics, wait: deps.Wait, pageSize: cmp.Or(deps.PageSize, 100), logger: cmp.Or(deps.Logger, slog.New(slog.DiscardHandler)),
		approvals: deps.Approvals, tokenEnds: deps.TokenEnds}
	if s.metrics == nil {
		s.metrics = telemetry.NewNop()
	}
	s.draining, s.stopWaiting = context.WithCancel(context.Background())
	cfg := deps.Config.WithDefaults()
	s.sessions = newSessionLimit(cfg.MaxSessions)
	if deps.Changes != nil {
		s.watchers = newWatchers(s, deps.Changes, cfg.Recheck)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "outboxd", Title: "outboxd"}, &mcp.ServerOptions{
		Instructions: instructions,
		Logger:       s.logger,
		// The tools are the caller's catalog, listed and called by the
		// middleware below rather than registered once for everyone.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: s.watchers != nil}, Resources: &mcp.ResourceCapabilities{}},
	})
	srv.AddReceivingMiddleware(s.middleware)
	srv.AddSendingMiddleware(s.sending)
	handler := func(stateless bool) http.Handler {
		return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
			Stateless:      stateless,
			SessionTimeout: cfg.SessionTimeout,
			Logger:         s.logger,
			// The SDK's DNS rebinding guard refuses a request that reached
			// a loopback address under another host name: every request
			// behind a reverse proxy on the same machine that keeps the
			// client's Host (outboxd listens on 127.0.0.1 by default).
			// It protects servers anyone on the machine may call; every
			// request here carries a bearer token the HTTP layer verified,
			// which a rebound page cannot send, as on the REST routes.
			DisableLocalhostProtection: true,
			// A client that cancels a call (2026-07-28: by ending its
			// request; 2025-11-25: with notifications/cancelled in its
			// session) ends its wait, and may withdraw the invocation
			// (withdraws).
			PropagateRequestCancellation: true,
		})
	}
	// A 2026-07-28 client keeps no session, and any API process serves its
	// requests, as the REST API does; the SDK serves that protocol only
	// without sessions. A 2025-11-25 client's session lives in the process
	// that started it, unless the front door is configured stateless.
	var streamable http.Handler = handler(true)
	if !cfg.Stateless {
		stateless, sessions := streamable, handler(false)
		streamable = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if sessionless(r.Header) {
				stateless.ServeHTTP(w, r)
				return
			}
			sessions.ServeHTTP(w, r)
		})
	}
	// The SDK hands a request's token information to the handlers; the
	// claims were verified by the HTTP layer, so this only moves them.
	s.handler = auth.RequireBearerToken(func(ctx context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		v, ok := r.Context().Value(verifiedKey{}).(verified)
		if !ok {
			return nil, fmt.Errorf("%w: no verified claims", auth.ErrInvalidToken)
		}
		c := v.claims
		info := &auth.TokenInfo{UserID: sessionOwner(c), Extra: map[string]any{claimsKey: c, originKey: v.origin}}
		if c.ExpiresAt != nil {
			info.Expiration = c.ExpiresAt.Time
		} else {
			info.Expiration = time.Now().Add(time.Minute)
		}
		return info, nil
	}, nil)(streamable)
	return s
}

// sessionOwner is who may use a 2025-11-25 session (the SDK answers
// another's requests 403): a token of the same organization, kind,
// subject, session, automation and user as the one that started it,
// which its calls and its catalog depend on. Encoded as a JSON array,
// no two differ only in where one ends ("a/b" and "c", "a" and "b/c").
func sessionOwner(c *outboxauth.Claims) string {
	b, _ := json.Marshal([]string{c.Org, string(c.Kind), c.Subject, c.SessionID, c.AutomationID, c.UserID})
	return string(b)
}

// sessionless reports whether a request's header names a protocol
// version without sessions (Mcp-Protocol-Version).
func sessionless(h http.Header) bool {
	return h.Get("Mcp-Protocol-Version") >= sessionlessVersion
}

// sessionlessVersion is the first protocol version without sessions
// (SEP-2575); its requests carry it in the Mcp-Protocol-Version header.
const sessionlessVersion = "2026-07-28"

// Close ends the front door's sessions and stops watching catalogs; the
// HTTP server's shutdown calls it so that no session's stream holds it up.
// Calls waiting for a human or a worker answer first, with where their
// invocation stands (pending, with its id: the client waits again with
// outboxd_wait, on any process), and their answers are written before
// their sessions close: a shutdown neither holds them until the wait
// ends nor loses them.
func (s *Server) Close() {
	s.stopWaiting()
	s.sessions.settle(closeGrace)
	if s.watchers != nil {
		s.watchers.close()
	}
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
// Authorization header) the HTTP layer verified, and whose client reached
// outboxd at origin ("https://outboxd.example.com").
func (s *Server) ServeMCP(w http.ResponseWriter, r *http.Request, c *outboxauth.Claims, origin string) {
	jw := &jsonErrors{ResponseWriter: w}
	defer jw.finish()
	// A session's POSTs count as its use while they are answered (not
	// its GET stream, which lasts); a session closed for room answers
	// none.
	if id := r.Header.Get("Mcp-Session-Id"); id != "" {
		end, gone := s.sessions.enter(c.Org, id)
		if gone {
			http.Error(jw, "session not found", http.StatusNotFound)
			return
		}
		if r.Method == http.MethodPost {
			defer end()
		} else {
			end()
		}
	}
	if r.Method == http.MethodPost {
		if problem := s.numericID(r); problem != "" {
			jw.Header().Set("Content-Type", "application/json")
			jw.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(jw).Encode(map[string]any{"jsonrpc": "2.0", "id": nil,
				"error": map[string]any{"code": jsonrpc.CodeInvalidRequest, "message": problem}})
			return
		}
	}
	s.handler.ServeHTTP(jw, r.WithContext(context.WithValue(r.Context(), verifiedKey{}, verified{claims: c, origin: origin})))
}

// maxIDBody is how much of a POST's body numericID reads: the SDK's own
// limit, past which it answers 413 itself.
const maxIDBody = 4 << 20

// numericID says why a request's id cannot be answered as it was sent,
// or "" (leaving r's body to be read again). The SDK reads a numeric id
// as a float64 made an int64, so it answered 9007199254740993 with
// 9007199254740992, 1.5 with 1 and 2^64 with -2^63: a client never
// matched its answer, and two such ids of a session were one. A number id
// is an integer of at most 2^53 in magnitude (JSON-RPC's ids have no
// fractional part; 2^53 is the largest every client's numbers hold).
func (s *Server) numericID(r *http.Request) string {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxIDBody+1))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
	if err != nil || len(body) > maxIDBody {
		return "" // the SDK answers it
	}
	var msg struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(body, &msg) != nil || len(msg.ID) == 0 {
		return ""
	}
	if c := msg.ID[0]; c != '-' && (c < '0' || c > '9') {
		return "" // a string, null or not an id at all: the SDK's to answer
	}
	if n, err := strconv.ParseInt(string(msg.ID), 10, 64); err != nil || n > 1<<53 || n < -(1<<53) {
		return "id: a number id must be an integer of at most 2^53 in magnitude (or send a string id)"
	}
	return ""
}

// jsonErrors turns the SDK's plain-text refusals (a body that is not JSON,
// one too large, an unknown session, a protocol version it does not
// serve) into JSON-RPC error objects, as every other answer of the front
// door is JSON.
type jsonErrors struct {
	http.ResponseWriter
	status int // of a plain-text refusal held back, else 0
	text   strings.Builder
}

func (j *jsonErrors) WriteHeader(code int) {
	if code >= 400 && strings.HasPrefix(j.Header().Get("Content-Type"), "text/plain") {
		j.status = code
		return
	}
	j.ResponseWriter.WriteHeader(code)
}

func (j *jsonErrors) Write(p []byte) (int, error) {
	if j.status != 0 {
		return j.text.Write(p)
	}
	return j.ResponseWriter.Write(p)
}

func (j *jsonErrors) Unwrap() http.ResponseWriter { return j.ResponseWriter }

// finish writes a refusal held back as a JSON-RPC error: -32700 for a body
// that does not parse, -32600 for the others.
func (j *jsonErrors) finish() {
	if j.status == 0 {
		return
	}
	message := strings.TrimSpace(j.text.String())
	code := jsonrpc.CodeInvalidRequest
	if j.status == http.StatusBadRequest && strings.Contains(strings.ToLower(message), "malformed") {
		code = jsonrpc.CodeParseError
	}
	j.Header().Set("Content-Type", "application/json")
	j.ResponseWriter.WriteHeader(j.status)
	_ = json.NewEncoder(j.ResponseWriter).Encode(map[string]any{"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": code, "message": message}})
}

// verified is what ServeMCP hands the SDK's token check: the caller's
// claims and the origin its client reached.
type verified struct {
	claims *outboxauth.Claims
	origin string
}

type verifiedKey struct{}

// claimsKey and originKey are where the claims and the origin travel in
// the SDK's token information, from request to handler.
const (
	claimsKey = "outboxd_claims"
	originKey = "outboxd_origin"
)

// callerOf returns the claims the request's token information carries.
func callerOf(req mcp.Request) (*outboxauth.Claims, error) {
	if extra := req.GetExtra(); extra != nil && extra.TokenInfo != nil {
		if c, ok := extra.TokenInfo.Extra[claimsKey].(*outboxauth.Claims); ok {
			return c, nil
		}
	}
	return nil, fmt.Errorf("the request carries no verified token")
}

// originOf returns the origin the request's client reached.
func originOf(req mcp.Request) string {
	if extra := req.GetExtra(); extra != nil && extra.TokenInfo != nil {
		origin, _ := extra.TokenInfo.Extra[originKey].(string)
		return origin
	}
	return ""
}

// middleware serves tools/list and tools/call from the caller's catalog,
// resources/list and resources/read from its guides (serve), and passes
// every other method to the SDK.
func (s *Server) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
		// The SDK serves each request on a goroutine of its own and does
		// not recover a panic there, so one would end the process: answer
		// it as an internal error instead, as the REST API does.
		defer func() {
			if v := recover(); v != nil {
				s.logger.ErrorContext(ctx, "mcp: panic serving a request", "method", method, "panic", v, "stack", string(debug.Stack()))
				res, err = nil, internalError()
			}
		}()
		ss, _ := req.GetSession().(*mcp.ServerSession)
		switch method {
		case "resources/list", "resources/read", "tools/list", "tools/call":
			res, err := s.serve(ctx, method, req)
			return res, s.own(ctx, method, err)
		case "initialize":
			if ss == nil || ss.ID() == "" {
				return next(ctx, method, req)
			}
			// A session that lives past this request (2025-11-25, not
			// stateless).
			return s.initialize(ctx, ss, method, req, next)
		case "subscriptions/listen":
			if extra := req.GetExtra(); extra == nil || !sessionless(extra.Header) {
				// A method of 2026-07-28 only: a 2025-11-25 client hears of
				// changes on its session's stream. In a session, whose
				// requests its POST ending does not cancel, the listen
				// would be held until the session closed, one more for
				// each such POST, and would count the session again.
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "subscriptions/listen is a method of protocol " + sessionlessVersion +
					"; in a 2025-11-25 session, tool list changes come on its stream (GET /mcp)"}
			}
			c, err := callerOf(req)
			if err != nil {
				return nil, s.own(ctx, method, err)
			}
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok && s.watchers != nil {
				// The client lists with other requests; what it saw is the
				// list as of now.
				tools, err := s.listed(withoutSDK(ctx), c)
				if err != nil {
					return nil, s.own(ctx, method, err)
				}
				defer s.watchers.track(ss, c, true, digestOf(tools))()
			}
			if s.tokenEnds != nil {
				var stop func()
				ctx, stop = s.tokenEnds(ctx, c)
				defer stop()
			}
		}
		return next(ctx, method, req)
	}
}

// serve answers a method the front door serves itself.
func (s *Server) serve(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
	c, err := callerOf(req)
	if err != nil {
		return nil, err
	}
	// The request's own context goes only to what notifies its client.
	ctx, reqCtx := withoutSDK(ctx), ctx
	switch method {
	case "resources/list":
		return s.listGuides(ctx, c)
	case "resources/read":
		return s.readGuide(ctx, c, req.GetParams().(*mcp.ReadResourceParams))
	case "tools/list":
		return s.listTools(ctx, c, req.(*mcp.ListToolsRequest))
	default: // tools/call
		call := req.(*mcp.CallToolRequest)
		res, err := s.callTool(ctx, c, call.Params, s.callRequestOf(reqCtx, call))
		switch {
		case err == nil:
		case reqCtx.Err() != nil:
			// Its client cancelled it (or went away): it is not a
			// request that could not be served.
			s.metrics.MCPCalls.WithLabelValues("cancelled").Inc()
		default:
			s.metrics.MCPCalls.WithLabelValues("invalid").Inc()
		}
		return res, err
	}
}

// withoutSDK is ctx without the values the SDK's server keeps in a
// request's context (its protocol version, its id), for the work a request
// asks of outboxd: the MCP client that lists and calls a connector's tools
// is the same SDK's and reads them, so a 2026-07-28 request's version went
// out with the initialize of a connector that speaks only 2025-11-25,
// whose server refused it.
func withoutSDK(ctx context.Context) context.Context { return sdkFree{ctx} }

type sdkFree struct{ context.Context }

func (c sdkFree) Value(key any) any {
	if key != nil && reflect.TypeOf(key).PkgPath() == sdkPackage {
		return nil
	}
	return c.Context.Value(key)
}

// sdkPackage is the import path of the SDK's mcp package, whose context
// keys withoutSDK leaves out.
var sdkPackage = reflect.TypeOf(mcp.Meta{}).PkgPath()

// internalError is what the client hears of an error of outboxd's own.
func internalError() error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
}

// own returns err as the client may hear it: a JSON-RPC error as it is;
// the database down, cut at its statement timeout or its organization's
// share of the connections taken, logged and answered with a code and
// when to retry, as the REST API's 503s are; any other error of
// outboxd's own logged and answered as an internal error, its text kept
// from the client.
func (s *Server) own(ctx context.Context, method string, err error) error {
	var rpcErr *jsonrpc.Error
	if err == nil || errors.As(err, &rpcErr) || ctx.Err() != nil {
		return err
	}
	if retry := retryable(err); retry != nil {
		s.logger.WarnContext(ctx, "mcp: the database could not serve a request", "method", method, "error", err)
		return retry
	}
	s.logger.ErrorContext(ctx, "mcp: serving a request", "method", method, "error", err)
	return internalError()
}

// retryable is the answer to a database error that passes: its code and
// the seconds to wait before retrying, in the message and as data
// ({"code", "retry_after_seconds"}); nil for any other error. Nothing was
// stored: a retried call with its idempotency key is safe.
func retryable(err error) *jsonrpc.Error {
	code, retryAfter, ok := dbutil.Passing(err)
	if !ok {
		return nil
	}
	secs := int(retryAfter.Seconds())
	data, _ := json.Marshal(map[string]any{"code": code, "retry_after_seconds": secs})
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Data: data,
		Message: fmt.Sprintf("%s: the database cannot serve this request now; retry in %d s", code, secs)}
}

// initialize starts a session that outlives its request, within its
// organization's limit; its client hears of tool list changes once it
// lists. A refused session is closed by the SDK, as one that failed to
// initialize.
func (s *Server) initialize(ctx context.Context, ss *mcp.ServerSession, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	c, err := callerOf(req)
	if err != nil {
		return nil, err
	}
	if !s.sessions.room(c.Org) {
		s.metrics.MCPSessionsLimited.WithLabelValues("refused").Inc()
		s.sessions.refusedLog.Do(func() {
			s.logger.WarnContext(ctx, "mcp: a session refused at the organization's limit (logged once a minute at most; outboxd_mcp_sessions_limited_total counts each)",
				"organization_id", c.Org, "max_sessions", s.sessions.max)
		})
		return nil, &jsonrpc.Error{Code: codeSessionLimit, Message: fmt.Sprintf(
			"this organization has %d MCP sessions open on this server, each with a request in flight: end a session (DELETE /mcp with its Mcp-Session-Id) or retry when a call has ended", s.sessions.max)}
	}
	res, err := next(ctx, method, req)
	if err != nil {
		return res, err
	}
	evict, added := s.sessions.admit(c.Org, ss)
	if !added {
		return res, nil
	}
	if evict != nil {
		s.metrics.MCPSessionsLimited.WithLabelValues("closed").Inc()
		s.sessions.closedLog.Do(func() {
			s.logger.InfoContext(ctx, "mcp: the session idle longest closed at the organization's limit (logged once a minute at most; outboxd_mcp_sessions_limited_total counts each)",
				"organization_id", c.Org, "max_sessions", s.sessions.max)
		})
		go s.sessions.close(evict)
	}
	untrack := func() {}
	if s.watchers != nil {
		untrack = s.watchers.track(ss, c, false, [32]byte{})
	}
	go func() {
		_ = ss.Wait()
		untrack()
		s.sessions.remove(ss)
	}()
	return res, nil
}

// codeSessionLimit is the JSON-RPC error of an initialize refused at the
// organization's session limit (in the range JSON-RPC leaves to servers).
const codeSessionLimit = -32000

// sending passes every message to the SDK, and notes the sessions whose
// subscriptions/listen agreed to hear of tool list changes; it keeps the
// SDK's sending handler, through which the watchers notify.
func (s *Server) sending(next mcp.MethodHandler) mcp.MethodHandler {
	s.send = next
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "notifications/subscriptions/acknowledged" && s.watchers != nil {
			if p, ok := req.GetParams().(*mcp.SubscriptionsAcknowledgedParams); ok && p.Notifications.ToolsListChanged {
				if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
					s.watchers.acknowledged(ss, p.Meta[mcp.MetaKeySubscriptionID])
				}
			}
		}
		return next(ctx, method, req)
	}
}
