// Package apptest runs a whole outboxd process in a test: a fresh database,
// the app on a loopback listener, a loopback Slack that speaks the Web API,
// and helpers to mint tokens and call the API.
package apptest

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/plugin"
	"github.com/outboxd/outboxd/executors/slack"
	"github.com/outboxd/outboxd/internal/api"
	"github.com/outboxd/outboxd/internal/app"
	"github.com/outboxd/outboxd/internal/client"
	"github.com/outboxd/outboxd/internal/domain/approvers"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/auth/signin"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/relay/slackapproval"
	"github.com/outboxd/outboxd/internal/domain/relay/webhook"
	"github.com/outboxd/outboxd/internal/domain/revocation"
	"github.com/outboxd/outboxd/internal/mcpfront"
	"github.com/outboxd/outboxd/internal/platform/httpserver"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
	"github.com/outboxd/outboxd/internal/platform/secretbox"
	"github.com/outboxd/outboxd/internal/platform/tracing"
	"github.com/outboxd/outboxd/outbox"
	"github.com/outboxd/outboxd/worker"
)

// Org is the organization the default tokens belong to.
const Org = "org-1"

// Session is the default sandbox token's session.
const Session = "session-1"

// Options adjust the process under test.
type Options struct {
	Role      app.Role
	Outbox    outbox.Config
	Worker    worker.Config
	SlackFunc http.HandlerFunc // Slack's answer; default ok with a ts
	// BaseURLs point providers, by source id, at loopback servers; a
	// provider not named gets an unroutable address (Slack: the fake Slack).
	BaseURLs map[string]string
	// BrokerURL switches token resolution to the HTTP token broker.
	BrokerURL string
	// DenyPrivateNetworks refuses loopback connector URLs (tests allow
	// them by default, since their MCP servers run on loopback).
	DenyPrivateNetworks bool
	// ConnectorCacheTTL is how long tool lists are cached; default 5m.
	ConnectorCacheTTL time.Duration
	// Logs, when set, receives the process's logs.
	Logs io.Writer
	// DatabaseURL reuses a database instead of creating one.
	DatabaseURL string
	// SecretsKey seals credentials; default a fresh key. Reuse another
	// bundle's Config.SecretsKey to share its database.
	SecretsKey string
	// ShutdownTimeout bounds the graceful stop; default 10s.
	ShutdownTimeout time.Duration
	// Streams tunes the event streams.
	Streams api.StreamConfig
	// Webhooks configures webhook delivery; default fast retries and relay.
	Webhooks webhook.Config
	// Slack configures Slack approvals; default a fast relay.
	Slack slackapproval.Config
	// Approvals is approval.required; default one approval for every tier.
	Approvals approvers.Config
	// Plugins configures the plugin action packages; default none.
	Plugins plugin.Config
	// MCP tunes the MCP front door.
	MCP mcpfront.Config
	// Clock, when set, is River's and the workers' clock: a test moves it
	// forward past a deadline instead of waiting it out.
	Clock *Clock
	// Auth configures token verification besides the test secret (an
	// identity provider, a maximum lifetime); default none.
	Auth auth.Config
	// Revocations tunes how revoked tokens are learnt of; default a 100ms
	// refresh.
	Revocations revocation.Config
	// Tracing configures OpenTelemetry tracing; default off.
	Tracing tracing.Config
	// HTTP bounds the server's connections. Default: no cap on
	// unauthenticated requests (tests send many from loopback), read and
	// write timeouts of 5m (a test machine busy with the race detector and
	// other tests once took over a minute for a 6 MB batch), the server's
	// defaults otherwise.
	HTTP *httpserver.Config
	// Console configures console sign-in (its ClientID turns it on); its
	// Issuer follows Auth.IdP.Issuer.
	Console signin.Config
	// MetricsToken is metrics.token; default none (/metrics is open).
	MetricsToken string
	// OrgConnWait and StatementTimeout are database.org_conn_wait and
	// database.statement_timeout; default theirs (10s, 30s).
	OrgConnWait, StatementTimeout time.Duration
}

// Bundle is a running outboxd under test.
type Bundle struct {
	T      testing.TB
	URL    string
	App    *app.App
	Pool   *pgxpool.Pool
	DBURL  string
	Slack  *Slack
	Secret string
	Config *app.Config
	// Contract checks every exchange of Do and Open and every event of
	// Stream against the API's OpenAPI document; a mismatch fails the
	// test. Set it to nil to send what the document does not describe.
	Contract *Contract

	stop func()
}

// Start runs outboxd for the test and stops it at cleanup.
func Start(t testing.TB, opts *Options) *Bundle {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	dbURL := opts.DatabaseURL
	if dbURL == "" {
		dbURL = pgtest.URL(t)
	}
	pool, err := pgxpool.New(context.Background(), dbURL)
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	slack := NewSlack(t, opts.SlackFunc)
	wcfg := opts.Worker
	if wcfg.PollInterval == 0 {
		wcfg.PollInterval = 100 * time.Millisecond
	}
	if wcfg.RetryBaseDelay == 0 {
		wcfg.RetryBaseDelay = 100 * time.Millisecond
	}
	cfg := &app.Config{
		HTTPAddr:             "127.0.0.1:0",
		JWTSecret:            "test-secret-0123456789abcdef",
		SecretsKey:           cmp.Or(opts.SecretsKey, secretbox.NewKey()),
		Providers:            providerConfigs(opts.BaseURLs, slack.Server.URL),
		BrokerURL:            opts.BrokerURL,
		AllowPrivateNetworks: !opts.DenyPrivateNetworks,
		ConnectorCacheTTL:    opts.ConnectorCacheTTL,
		ShutdownTimeout:      cmp.Or(opts.ShutdownTimeout, 10*time.Second),
		Outbox:               opts.Outbox,
		Worker:               wcfg,
		Streams:              opts.Streams,
		Webhooks:             opts.Webhooks,
		Slack:                opts.Slack,
		Approvals:            opts.Approvals,
		Plugins:              opts.Plugins,
		MCP:                  opts.MCP,
		Auth:                 opts.Auth,
		Revocations:          opts.Revocations,
		Tracing:              opts.Tracing,
		Console:              opts.Console,
		MetricsToken:         opts.MetricsToken,
		OrgConnWait:          opts.OrgConnWait,
		StatementTimeout:     opts.StatementTimeout,
	}
	if cfg.Revocations.RefreshInterval == 0 {
		cfg.Revocations.RefreshInterval = 100 * time.Millisecond
	}
	cfg.HTTP = httpserver.Config{ReadTimeout: 5 * time.Minute, WriteTimeout: 5 * time.Minute}
	if opts.HTTP != nil {
		cfg.HTTP = *opts.HTTP
	}
	if cfg.Slack.RelayInterval == 0 {
		cfg.Slack.RelayInterval = 100 * time.Millisecond
	}
	if cfg.Webhooks.RetryBaseDelay == 0 {
		cfg.Webhooks.RetryBaseDelay = 50 * time.Millisecond
	}
	if cfg.Webhooks.RelayInterval == 0 {
		cfg.Webhooks.RelayInterval = 100 * time.Millisecond
	}
	if opts.BrokerURL != "" {
		cfg.TokenSource = "broker"
	}
	role := opts.Role
	if role == "" {
		role = app.RoleAll
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if opts.Logs != nil {
		logger = slog.New(slog.NewTextHandler(opts.Logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	} else if os.Getenv("OUTBOXD_TEST_LOG") != "" {
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if opts.Clock != nil {
		cfg.Time = opts.Clock
	}
	a, err := app.New(cfg, role, pool, logger)
	require.NoError(t, err)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	serving := make(chan struct{})
	go func() { done <- a.Serve(ctx, ln, func(string) { close(serving) }) }()
	// Return once it serves: a test that finishes before the start-up
	// checks ran would otherwise stop it in the middle of them.
	select {
	case <-serving:
	case err := <-done:
		cancel()
		require.NoError(t, err, "outboxd did not start")
		t.Fatal("outboxd stopped before serving")
	}

	contract, err := DefaultContract()
	require.NoError(t, err, "the OpenAPI document")
	b := &Bundle{T: t, URL: "http://" + ln.Addr().String(), App: a, Pool: pool, DBURL: dbURL, Slack: slack, Secret: cfg.JWTSecret, Config: cfg, Contract: contract}
	var once sync.Once
	b.stop = func() {
		once.Do(func() {
			cancel()
			require.NoError(t, <-done)
		})
	}
	t.Cleanup(b.stop)
	return b
}

// Stop shuts the process down now (it is otherwise stopped at cleanup).
func (b *Bundle) Stop() { b.stop() }

// Token mints a token for claims, defaulting org and subject.
func (b *Bundle) Token(c auth.Claims) string {
	b.T.Helper()
	if c.Org == "" {
		c.Org = Org
	}
	if c.Subject == "" {
		c.Subject = string(c.Kind) + "-" + string(c.Role) + c.SessionID
	}
	tok, err := auth.Mint(b.Secret, c, time.Hour)
	require.NoError(b.T, err)
	return tok
}

// Owner, Admin, Member, Sandbox and Service are default tokens of Org.
func (b *Bundle) Owner() string {
	return b.Token(auth.Claims{Kind: auth.KindUser, Role: auth.RoleOwner})
}
func (b *Bundle) Admin() string {
	return b.Token(auth.Claims{Kind: auth.KindUser, Role: auth.RoleAdmin})
}
func (b *Bundle) Member() string {
	return b.Token(auth.Claims{Kind: auth.KindUser, Role: auth.RoleMember})
}
func (b *Bundle) Sandbox() string {
	return b.Token(auth.Claims{Kind: auth.KindSandbox, SessionID: Session})
}
func (b *Bundle) Service() string {
	return b.Token(auth.Claims{Kind: auth.KindService, AutomationID: "automation-1"})
}

// Response is a decoded API answer.
type Response struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    []byte
}

// Do calls the API with a JSON body (a string is sent as is).
func (b *Bundle) Do(method, path, token string, body any, headers ...string) *Response {
	b.T.Helper()
	var sent []byte
	switch v := body.(type) {
	case nil:
	case string:
		sent = []byte(v)
	case []byte:
		sent = v
	default:
		raw, err := json.Marshal(v)
		require.NoError(b.T, err)
		sent = raw
	}
	if body != nil && sent == nil {
		sent = []byte{}
	}
	header := http.Header{"Content-Type": {"application/json"}}
	for i := 0; i+1 < len(headers); i += 2 {
		header.Set(headers[i], headers[i+1])
	}
	resp, raw, err := b.Client(token).Do(context.Background(), method, path, sent, header)
	require.NoError(b.T, err)
	b.checkContract(sentRequest(resp), sent, resp, raw)
	r := &Response{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &r.Body)
	}
	return r
}

// Client is a client of the API with token (none when empty).
func (b *Bundle) Client(token string) *client.Client {
	return &client.Client{BaseURL: b.URL, Token: token, HTTP: http.DefaultClient}
}

// sentRequest is the request resp answers, the first of any redirects.
func sentRequest(resp *http.Response) *http.Request {
	req := resp.Request
	for req.Response != nil {
		req = req.Response.Request
	}
	return req
}

// checkContract fails the test when an exchange does not match the
// OpenAPI document (see Contract.Check).
func (b *Bundle) checkContract(req *http.Request, reqBody []byte, resp *http.Response, respBody []byte) {
	if b.Contract == nil {
		return
	}
	if err := b.Contract.Check(req, reqBody, resp, respBody); err != nil {
		// Errorf, not Fatalf: Do may run on another goroutine of the test.
		b.T.Errorf("OpenAPI contract: %s %s: %v\nanswer: %s", req.Method, req.URL.RequestURI(), err, respBody)
	}
}

// Invoke calls the invoke route as the default sandbox.
func (b *Bundle) Invoke(action string, params any, headers ...string) *Response {
	b.T.Helper()
	return b.Do("POST", "/v1/sessions/"+Session+"/actions/invoke", b.Sandbox(), map[string]any{
		"integration": "slack", "action": action, "params": params,
	}, headers...)
}

// SetModes replaces the org's mode overrides.
func (b *Bundle) SetModes(modes map[string]string) {
	b.T.Helper()
	r := b.Do("PUT", "/v1/action-modes", b.Owner(), modes)
	require.Equal(b.T, http.StatusOK, r.Status, string(r.Raw))
}

// StoreSlackToken stores the org's Slack credential.
func (b *Bundle) StoreSlackToken(token string) { b.StoreToken("slack", token, "") }

// StoreToken stores the org's credential for integration; kind is
// "api_key", "oauth" or "".
func (b *Bundle) StoreToken(integration, token, kind string) {
	b.T.Helper()
	r := b.Do("PUT", "/v1/credentials/"+integration, b.Owner(), map[string]string{"token": token, "token_kind": kind})
	require.Equal(b.T, http.StatusOK, r.Status, string(r.Raw))
}

// AuditEntries lists the organization's audit trail through the API,
// newest first (at most 500), filtered by query ("action=tokens.revoke").
func (b *Bundle) AuditEntries(query string) []map[string]any {
	b.T.Helper()
	r := b.Do("GET", "/v1/audit?limit=500&"+query, b.Admin(), nil)
	require.Equal(b.T, http.StatusOK, r.Status, string(r.Raw))
	var out []map[string]any
	for _, e := range r.Body["entries"].([]any) {
		out = append(out, e.(map[string]any))
	}
	return out
}

// Invocation reads an invocation as the owner.
func (b *Bundle) Invocation(id string) map[string]any {
	b.T.Helper()
	r := b.Do("GET", "/v1/invocations/"+id, b.Owner(), nil)
	require.Equal(b.T, http.StatusOK, r.Status, string(r.Raw))
	return r.Body["invocation"].(map[string]any)
}

// WaitStatus polls an invocation until it has status or the timeout passes.
func (b *Bundle) WaitStatus(id string, status invocation.Status, timeout time.Duration) map[string]any {
	b.T.Helper()
	deadline := time.Now().Add(timeout)
	for {
		inv := b.Invocation(id)
		if inv["status"] == string(status) {
			return inv
		}
		if time.Now().After(deadline) {
			b.T.Fatalf("invocation %s is %v, want %s (error: %v)", id, inv["status"], status, inv["error"])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Slack is a loopback Slack Web API.
type Slack struct {
	Server *httptest.Server

	mu       sync.Mutex
	requests []SlackRequest
	handler  http.HandlerFunc
}

// SlackRequest is what the loopback Slack received.
type SlackRequest struct {
	Path           string
	Authorization  string
	IdempotencyKey string
	// Traceparent is the request's W3C traceparent header.
	Traceparent string
	Body        map[string]any
}

// NewSlack starts a loopback Slack. handler writes the answer; the default
// is a successful chat.postMessage.
func NewSlack(t testing.TB, handler http.HandlerFunc) *Slack {
	s := &Slack{handler: handler}
	if s.handler == nil {
		s.handler = SlackOK
	}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		s.mu.Lock()
		s.requests = append(s.requests, SlackRequest{
			Path: r.URL.Path, Authorization: r.Header.Get("Authorization"),
			IdempotencyKey: r.Header.Get("X-Outboxd-Idempotency-Key"), Traceparent: r.Header.Get("traceparent"), Body: body,
		})
		h := s.handler
		s.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(s.Server.Close)
	return s
}

// SetHandler changes Slack's answer.
func (s *Slack) SetHandler(h http.HandlerFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handler = h
}

// Requests returns what Slack received so far, but the read-only
// look-ups of previews (conversations.info, users.info: see
// AllRequests), so that a test counts what was posted or read for a call.
func (s *Slack) Requests() []SlackRequest {
	var out []SlackRequest
	for _, r := range s.AllRequests() {
		if !strings.HasSuffix(r.Path, "/conversations.info") && !strings.HasSuffix(r.Path, "/users.info") {
			out = append(out, r)
		}
	}
	return out
}

// AllRequests returns everything Slack received so far.
func (s *Slack) AllRequests() []SlackRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SlackRequest(nil), s.requests...)
}

// Posts returns the chat.postMessage calls Slack received so far.
func (s *Slack) Posts() []SlackRequest {
	var out []SlackRequest
	for _, r := range s.Requests() {
		if strings.HasSuffix(r.Path, "/chat.postMessage") {
			out = append(out, r)
		}
	}
	return out
}

// SlackOK answers like a successful chat.postMessage and, to a retry's
// look-up for an earlier post (conversations.history or .replies), like
// a conversation without messages: it keeps nothing. slacktest keeps
// messages.
func SlackOK(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if strings.HasSuffix(r.URL.Path, "/conversations.history") || strings.HasSuffix(r.URL.Path, "/conversations.replies") {
		_, _ = io.WriteString(w, `{"ok":true,"messages":[],"has_more":false,"response_metadata":{"next_cursor":""}}`)
		return
	}
	_, _ = io.WriteString(w, `{"ok":true,"channel":"C0123456789","ts":"1503435956.000247","message":{"type":"message","text":"hello","user":"U0123","ts":"1503435956.000247"}}`)
}

// SlackError answers ok:false with code.
func SlackError(code string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_, _ = io.WriteString(w, `{"ok":false,"error":"`+code+`"}`)
	}
}

// providerConfigs points every provider at its entry of baseURLs, else Slack
// at slackURL and the others at an unroutable address.
func providerConfigs(baseURLs map[string]string, slackURL string) map[string]executors.ProviderConfig {
	out := make(map[string]executors.ProviderConfig, len(app.Providers))
	for _, p := range app.Providers {
		fallback := "http://127.0.0.1:9/" + p.ID
		if p.ID == slack.SourceID {
			fallback = slackURL
		}
		out[p.ID] = executors.ProviderConfig{BaseURL: cmp.Or(baseURLs[p.ID], fallback)}
	}
	return out
}

// Logs collects what a process under test writes (its logs, its output)
// while the test reads it.
type Logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *Logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *Logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
