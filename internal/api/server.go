// Package api is outboxd's HTTP API: JSON over net/http, bearer JWTs,
// errors as {"error":{"code","message","details"}}. Handlers only call the
// outbox service; nothing here talks to a provider.
package api

import (
	"bytes"
	"cmp"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/time/rate"

	"github.com/outboxd/outboxd/console"
	"github.com/outboxd/outboxd/internal/domain/audit"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/internal/platform/httpserver"
	"github.com/outboxd/outboxd/migrations"
)

// maxBodyBytes bounds request bodies.
const maxBodyBytes = 1 << 20

// Deps are the server's collaborators.
type Deps struct {
	Service  Outbox
	Catalog  Catalog
	Settings Settings
	Admin    Admin
	Feeds    Feeds
	Verifier *auth.Verifier
	Pool     *pgxpool.Pool
	Gatherer prometheus.Gatherer
	// MetricsToken, when set, is the bearer token /metrics asks for.
	MetricsToken string
	Logger       *slog.Logger
	// Streams tunes the event streams.
	Streams StreamConfig
	// SyncWait is how long an allow-mode invoke may wait for its worker
	// (outbox.Config.SyncWait): its answer's write deadline is extended by
	// as much.
	SyncWait time.Duration
	// Webhooks manages webhook endpoints.
	Webhooks Webhooks
	// Slack holds the Slack approval settings; SlackClicks takes Slack's
	// clicks on approval messages (nil: not served).
	Slack       Slack
	SlackClicks http.Handler
	// Approvers holds the approval policies and the approvals so far (nil:
	// its routes answer 404 and views carry no approvals).
	Approvers Approvers
	// MCP serves /mcp (nil: not served).
	MCP MCP
	// Connectors and Databases manage the org-registered sources.
	Connectors Connectors
	Databases  Databases
	// Revocations revokes tokens and ends the event streams of revoked
	// ones.
	Revocations Revocations
	// OrgRequests caps the requests one organization has in progress in
	// this process (authenticated routes and /mcp); nil: no cap.
	OrgRequests *httpserver.OrgLimiter
	// Unauthenticated caps the requests a client address sends without a
	// valid bearer token; nil: no cap.
	Unauthenticated *httpserver.AddrLimiter
	// Audit records administrative changes and serves the trail (nil:
	// nothing recorded, the trail's routes answer 404).
	Audit Audit
	// TrustForwardedFor takes a client's address from X-Forwarded-For
	// (http.trust_forwarded_for), as the audit trail records it.
	TrustForwardedFor bool
	// Previews reads invocations' previews for GET /v1/invocations/{id}
	// (nil: none shown).
	Previews Previews
	// Console signs people in to the console with the identity provider
	// (nil: not configured).
	Console ConsoleSignIn
	// Grants lists and revokes grants (nil: their routes answer 404).
	Grants Grants
}

// Server routes requests to the outbox service.
type Server struct {
	previews     Previews
	svc          Outbox
	catalog      Catalog
	settings     Settings
	admin        Admin
	feeds        Feeds
	verifier     *auth.Verifier
	pool         *pgxpool.Pool
	gatherer     prometheus.Gatherer
	metricsToken string
	logger       *slog.Logger
	streams      StreamConfig
	syncWait     time.Duration
	webhooks     Webhooks
	slack        Slack
	// slackClicks is nil when Slack's clicks are not served.
	slackClicks http.Handler
	// approvers is nil when approval policies are not served.
	approvers Approvers
	// mcp is nil when /mcp is not served.
	mcp MCP
	// connectors and databases manage the org-registered sources.
	connectors  Connectors
	databases   Databases
	revocations Revocations
	// unauthenticated is nil without a cap.
	unauthenticated *httpserver.AddrLimiter
	orgRequests     *httpserver.OrgLimiter
	// orgRequestsLog keeps a flood of refusals out of the log.
	orgRequestsLog rate.Sometimes
	// audit is nil when nothing is recorded.
	audit             Audit
	trustForwardedFor bool
	// console is nil without console sign-in.
	console ConsoleSignIn
	// grants is nil when grants are not served.
	grants Grants

	closing   chan struct{}
	closeOnce sync.Once
}

// New returns a Server.
func New(deps *Deps) *Server {
	if deps.Logger != nil {
		encodeLog.Store(deps.Logger)
	}
	return &Server{
		previews:     deps.Previews,
		svc:          deps.Service,
		catalog:      deps.Catalog,
		settings:     deps.Settings,
		admin:        deps.Admin,
		feeds:        deps.Feeds,
		verifier:     deps.Verifier,
		pool:         deps.Pool,
		gatherer:     deps.Gatherer,
		metricsToken: deps.MetricsToken,
		logger:       cmp.Or(deps.Logger, slog.New(slog.DiscardHandler)),
		streams:      deps.Streams.WithDefaults(),
		syncWait:     deps.SyncWait,
		webhooks:     deps.Webhooks,
		slack:        deps.Slack,
		approvers:    deps.Approvers,
		slackClicks:  deps.SlackClicks,
		mcp:          deps.MCP,
		closing:      make(chan struct{}),

		unauthenticated: deps.Unauthenticated,
		orgRequests:     deps.OrgRequests,
		orgRequestsLog:  rate.Sometimes{First: 1, Interval: time.Minute},
		console:         deps.Console,

		audit:             deps.Audit,
		trustForwardedFor: deps.TrustForwardedFor,

		connectors:  deps.Connectors,
		databases:   deps.Databases,
		revocations: deps.Revocations,
		grants:      deps.Grants,
	}
}

// CloseStreams ends every open event stream and MCP session, so that a
// graceful shutdown does not wait for them; clients reconnect elsewhere
// (an event stream with Last-Event-ID, an MCP client with a new session).
func (s *Server) CloseStreams() {
	s.closeOnce.Do(func() {
		close(s.closing)
		if s.mcp != nil {
			s.mcp.Close()
		}
	})
}

// Handler returns the API's routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range s.publicRoutes() {
		mux.Handle(rt.method+" "+rt.pattern, rt.handler)
	}
	for _, rt := range s.routes() {
		mux.Handle(rt.method+" "+rt.pattern, s.authed(&rt))
	}
	mux.Handle("/", noRoute(mux))
	return s.recoverer(s.limitUnauthenticated(mux))
}

// limitUnauthenticated caps, per client address, the requests that carry
// no valid bearer token or console session: the public routes and refused
// tokens. Requests with a valid token pass uncounted.
func (s *Server) limitUnauthenticated(next http.Handler) http.Handler {
	if s.unauthenticated == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := s.callerClaims(r); err == nil {
			next.ServeHTTP(w, r)
			return
		}
		if ok, wait := s.unauthenticated.Allow(r); !ok {
			closeUnread(w, r)
			writeError(w, rateLimited("too many requests without a valid bearer token from this address", wait))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// bearerClaims verifies r's bearer token.
func (s *Server) bearerClaims(r *http.Request) (*auth.Claims, error) {
	// The scheme is case-insensitive (RFC 9110 §11.1).
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return nil, &apiError{status: http.StatusUnauthorized, code: "unauthorized", message: "missing bearer token"}
	}
	claims, err := s.verifier.Verify(strings.TrimSpace(token))
	if errors.Is(err, auth.ErrTokenRevoked) {
		return nil, tokenRevoked()
	}
	if err != nil {
		return nil, &apiError{status: http.StatusUnauthorized, code: "unauthorized", message: "invalid token: " + err.Error()}
	}
	return claims, nil
}

// tokenRevoked is the answer to a revoked token: to its request, when the
// verifier refuses it, and to a request it made past that check whose
// invocation was withdrawn as it was recorded (invocation.RevokedError).
func tokenRevoked() *apiError {
	return &apiError{status: http.StatusUnauthorized, code: "token_revoked", message: "token revoked"}
}

// closeUnread makes a refusal that leaves a request's body unread close
// the connection once answered, rather than net/http reading the rest of
// the body (as long as a slow client takes to send it, up to the read
// timeout) before answering or closing.
func closeUnread(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength != 0 {
		w.Header().Set("Connection", "close")
		_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	}
}

// metrics serves the Prometheus exposition: to anyone, or, with
// metrics.token set, to a request bearing that token.
func (s *Server) metrics() http.Handler {
	h := promhttp.HandlerFor(s.gatherer, promhttp.HandlerOpts{})
	if s.metricsToken == "" {
		return h
	}
	want := []byte(s.metricsToken)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(token)), want) != 1 {
			writeError(w, &apiError{status: http.StatusUnauthorized, code: "unauthorized",
				message: "/metrics needs the bearer token set as metrics.token",
				header:  http.Header{"Www-Authenticate": {`Bearer realm="metrics"`}}})
			return
		}
		h.ServeHTTP(w, r)
	})
}

// publicRoute is a route that takes no bearer token (of outboxd's).
type publicRoute struct {
	method, pattern string
	handler         http.Handler
}

// publicRoutes are the routes served without a bearer token.
func (s *Server) publicRoutes() []publicRoute {
	out := []publicRoute{
		{"GET", "/healthz", http.HandlerFunc(s.healthz)},
		{"GET", "/readyz", http.HandlerFunc(s.readyz)},
		{"GET", "/metrics", s.metrics()},
		{"GET", "/openapi.json", http.HandlerFunc(s.openapi)},
		// The web console: static files, no token (its API calls carry one).
		{"GET", "/console/", console.Handler()},
		{"GET", "/console", http.RedirectHandler(console.Prefix, http.StatusMovedPermanently)},
	}
	out = append(out, s.signInRoutes()...)
	if s.mcp != nil {
		// The MCP front door checks its bearer token itself, to answer a
		// refusal with the resource metadata's address.
		for _, method := range []string{"POST", "GET", "DELETE"} {
			out = append(out, publicRoute{method, "/mcp", http.HandlerFunc(s.serveMCP)})
		}
		out = append(out, publicRoute{"GET", wellKnownResource, http.HandlerFunc(s.protectedResource)},
			publicRoute{"GET", wellKnownMCPResource, http.HandlerFunc(s.protectedResource)})
	}
	if s.slackClicks != nil {
		// Slack signs its requests; there is no bearer token.
		out = append(out, publicRoute{"POST", "/v1/slack/interactions", s.slackClicks})
	}
	return out
}

// noRoute answers what no route takes in the API's JSON error shape rather
// than net/http's plain text: 405 with Allow when the path exists under
// other methods, else 404.
func noRoute(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var allowed []string
		for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			probe := r.Clone(r.Context())
			probe.Method = method
			if _, pattern := mux.Handler(probe); pattern != "/" {
				allowed = append(allowed, method)
			}
		}
		if len(allowed) > 0 {
			w.Header().Set("Allow", strings.Join(allowed, ", "))
			writeError(w, &apiError{status: http.StatusMethodNotAllowed, code: "method_not_allowed",
				message: r.Method + " is not allowed on " + r.URL.Path})
			return
		}
		writeError(w, &apiError{status: http.StatusNotFound, code: "not_found", message: "no route for " + r.Method + " " + r.URL.Path})
	})
}

type claimsKey struct{}

// handlerFunc is a handler that returns its error; the error is written as
// JSON in one place.
type handlerFunc func(w http.ResponseWriter, r *http.Request, c *auth.Claims) error

// authed verifies the bearer token or the console session (callerClaims),
// refuses text Postgres cannot store in the path, query and
// Idempotency-Key (checkRequestText), applies the route's rule and runs
// its handler.
func (s *Server) authed(rt *route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Answers hold an organization's data: no cache keeps them (an
		// event stream says no-cache itself), and none is sniffed.
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		claims, err := s.callerClaims(r)
		if err != nil {
			closeUnread(w, r)
			s.writeErr(w, r, err)
			return
		}
		if err := checkRequestText(r); err != nil {
			s.writeErr(w, r, err)
			return
		}
		if err := rt.authorize(r, claims); err != nil {
			s.writeErr(w, r, err)
			return
		}
		release, ok := s.admitOrg(w, r, claims.Org)
		if !ok {
			return
		}
		defer release()
		r.Body = http.MaxBytesReader(w, r.Body, rt.bodyLimit())
		// The database shows this request only its organization's rows, and
		// the changes it makes are recorded as the caller's.
		ctx := dbutil.WithOrg(context.WithValue(r.Context(), claimsKey{}, claims), claims.Org)
		ctx = audit.WithActor(ctx, s.actor(r, claims))
		if err := rt.handler(w, r.WithContext(ctx), claims); err != nil {
			s.writeErr(w, r, err)
		}
	})
}

func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.logger.ErrorContext(r.Context(), "panic serving request", "method", r.Method, "path", r.URL.Path, "panic", v)
				writeError(w, &apiError{status: http.StatusInternalServerError, code: "internal", message: "internal error"})
			}
		}()
		next.ServeHTTP(w, r)
	})
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	if err := s.pool.Ping(ctx); err != nil {
		writeError(w, &apiError{status: http.StatusServiceUnavailable, code: "database_unreachable", message: err.Error()})
		return
	}
	if err := migrations.Check(ctx, s.pool); err != nil {
		writeError(w, &apiError{status: http.StatusServiceUnavailable, code: "not_migrated", message: err.Error() + "; run `outboxd migrate up`"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// apiError is an error with its HTTP answer.
type apiError struct {
	status  int
	code    string
	message string
	details any
	header  http.Header
}

func (e *apiError) Error() string { return e.message }

func forbidden(msg string) error {
	return &apiError{status: http.StatusForbidden, code: "forbidden", message: msg}
}

func badRequest(code, msg string) error {
	return &apiError{status: http.StatusBadRequest, code: code, message: msg}
}

// kindStatus is the HTTP status of each kind of domain error (package errs).
var kindStatus = map[*errs.Kind]int{
	errs.NotFound:             http.StatusNotFound,
	errs.Conflict:             http.StatusConflict,
	errs.Expired:              http.StatusGone,
	errs.PendingLimit:         http.StatusTooManyRequests,
	errs.IdempotencyMismatch:  http.StatusUnprocessableEntity,
	errs.SourceUnavailable:    http.StatusServiceUnavailable,
	errs.SourceNotAllowed:     http.StatusForbidden,
	errs.SourceDisabled:       http.StatusForbidden,
	errs.AutomationNotAllowed: http.StatusForbidden,
	errs.SelfApproval:         http.StatusForbidden,
	errs.PreconditionFailed:   http.StatusPreconditionFailed,
	errs.NotApprover:          http.StatusForbidden,
	errs.AlreadyApproved:      http.StatusConflict,
}

// toAPIError maps domain errors to HTTP answers: the one place that does.
func toAPIError(err error) *apiError {
	var (
		ae  *apiError
		ve  *errs.ValidationError
		rle *errs.RateLimitError
	)
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &ve):
		return &apiError{status: http.StatusBadRequest, code: "invalid_request", message: ve.Message, details: map[string]any{"fields": ve.Fields}}
	case errors.As(err, &rle):
		return rateLimited(err.Error(), rle.RetryAfter)
	case errors.Is(err, auth.ErrTokenRevoked):
		// The token was revoked after its check let the request in: what
		// it asked for was withdrawn as it was recorded.
		return tokenRevoked()
	}
	if code, retryAfter, ok := dbutil.Passing(err); ok {
		return databaseRetry(code, retryAfter)
	}
	if isUnstorableValue(err) {
		return &apiError{status: http.StatusBadRequest, code: "invalid_request", message: "a value is too long or is not storable text"}
	}
	if kind := errs.KindOf(err); kind != nil {
		return &apiError{status: kindStatus[kind], code: kind.Code, message: err.Error()}
	}
	return nil
}

// rateLimited is a 429 that says when to retry, in whole seconds.
// admitOrg counts r, a request of org, in progress (OrgRequests) and
// returns what ends it; at the organization's share of this process's
// connections it answers 429 itself and returns false.
func (s *Server) admitOrg(w http.ResponseWriter, r *http.Request, org string) (release func(), ok bool) {
	release, ok = s.orgRequests.Acquire(org)
	if !ok {
		s.orgRequestsLog.Do(func() {
			s.logger.Warn("an organization's request refused at http.max_org_requests (logged once a minute at most)",
				"organization_id", org, "max_org_requests", s.orgRequests.Max())
		})
		closeUnread(w, r)
		s.writeErr(w, r, rateLimited(fmt.Sprintf("this organization has %d requests in progress on this server (event streams and waiting calls included), its share of the server's connections: retry when one has ended", s.orgRequests.Max()), 0))
	}
	return release, ok
}

func rateLimited(msg string, retryAfter time.Duration) *apiError {
	secs := int(retryAfter.Seconds()) + 1
	return &apiError{status: http.StatusTooManyRequests, code: "rate_limited", message: msg,
		details: map[string]any{"retry_after_seconds": secs}, header: http.Header{"Retry-After": {fmt.Sprint(secs)}}}
}

func (s *Server) writeErr(w http.ResponseWriter, r *http.Request, err error) {
	ae := toAPIError(err)
	switch {
	case ae == nil:
		s.logger.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "error", err)
		ae = &apiError{status: http.StatusInternalServerError, code: "internal", message: "internal error"}
	case ae.status == http.StatusServiceUnavailable:
		s.logger.WarnContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "status", ae.status, "error", err)
	}
	writeError(w, ae)
}

func writeError(w http.ResponseWriter, e *apiError) {
	for k, v := range e.header {
		w.Header()[k] = v
	}
	writeJSON(w, e.status, map[string]any{"error": errorBody(e)})
}

func errorBody(e *apiError) map[string]any {
	body := map[string]any{"code": e.code, "message": e.message}
	if e.details != nil {
		body["details"] = e.details
	}
	return body
}

// writeJSON answers status with v as JSON. v is encoded before anything
// is written: one encoding/json refuses (a NaN, a channel, a MarshalJSON
// that fails) is answered 500 with the API's error body, not status with
// an empty body, and logged by its Go type and the kind of failure,
// never its value.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		encodeLog.Load().Error("an answer could not be encoded as JSON: answered 500 instead",
			"status", status, "type", fmt.Sprintf("%T", v), "error", encodeFailure(err))
		buf.Reset()
		_ = json.NewEncoder(&buf).Encode(map[string]any{"error": map[string]any{"code": "internal", "message": "internal error"}})
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// encodeLog is where writeJSON logs an answer it could not encode: the
// logger of the last Server made (one a process), which writeJSON, called
// without one, cannot be given.
var encodeLog = func() *atomic.Pointer[slog.Logger] {
	var p atomic.Pointer[slog.Logger]
	p.Store(slog.New(slog.DiscardHandler))
	return &p
}()

// encodeFailure says why encoding/json refused a value without quoting
// it: an unsupported value's message is the value, a MarshalJSON's error
// may hold anything.
func encodeFailure(err error) string {
	var (
		typeErr    *json.UnsupportedTypeError
		valueErr   *json.UnsupportedValueError
		marshalErr *json.MarshalerError
	)
	switch {
	case errors.As(err, &typeErr):
		return "unsupported type " + typeErr.Type.String()
	case errors.As(err, &valueErr):
		return "unsupported value of type " + valueErr.Value.Type().String()
	case errors.As(err, &marshalErr):
		return "MarshalJSON or MarshalText of type " + marshalErr.Type.String() + " failed"
	}
	return fmt.Sprintf("%T", err)
}

// wrongType says which field of the body has a value of the wrong JSON
// type, in JSON's words: encoding/json's own message names the Go types
// the body is decoded into, which are no business of the caller's.
func wrongType(err *json.UnmarshalTypeError) string {
	var want string
	switch err.Type.Kind() {
	case reflect.Struct, reflect.Map:
		want = "an object"
	case reflect.Slice, reflect.Array:
		want = "an array"
	case reflect.String:
		want = "a string"
	case reflect.Bool:
		want = "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		want = "an integer"
	case reflect.Float32, reflect.Float64:
		want = "a number"
	default:
		want = "another kind of value"
	}
	if err.Field == "" {
		return fmt.Sprintf("the request body must be %s, not %s", want, err.Value)
	}
	return fmt.Sprintf("request body is not valid JSON: %s must be %s, not %s", err.Field, want, err.Value)
}

// decode reads one JSON object from the body into v. Unknown fields are
// errors unless lenient. Text Postgres cannot store is refused first, with
// the field named (checkBodyText).
func decode(r *http.Request, v any, lenient bool) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	if err := checkBodyText(body); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if !lenient {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.Is(err, io.EOF):
			return badRequest("invalid_json", "request body is empty")
		case errors.As(err, &typeErr):
			return badRequest("invalid_json", wrongType(typeErr))
		}
		return badRequest("invalid_json", "request body is not valid JSON: "+err.Error())
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badRequest("invalid_json", "request body has data after the JSON object")
	}
	return nil
}
