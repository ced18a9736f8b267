// Package app wires outboxd's parts into a running process: the pool, the
// River client, the sources, the outbox service and the HTTP server, for the
// api, worker or all roles. cmd/outboxd and the end-to-end tests share it.
package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/database"
	orgdatabases "github.com/outboxd/outboxd/executors/database/databases"
	"github.com/outboxd/outboxd/executors/database/databasestore"
	"github.com/outboxd/outboxd/executors/demo"
	"github.com/outboxd/outboxd/executors/mcp"
	"github.com/outboxd/outboxd/executors/mcp/connectors"
	"github.com/outboxd/outboxd/executors/mcp/mcpstore"
	"github.com/outboxd/outboxd/executors/plugin"
	"github.com/outboxd/outboxd/executors/slack"
	"github.com/outboxd/outboxd/internal/api"
	"github.com/outboxd/outboxd/internal/domain/admin"
	"github.com/outboxd/outboxd/internal/domain/approvers"
	"github.com/outboxd/outboxd/internal/domain/audit"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/auth/signin"
	"github.com/outboxd/outboxd/internal/domain/catalog"
	"github.com/outboxd/outboxd/internal/domain/credential"
	"github.com/outboxd/outboxd/internal/domain/credential/credentialstore"
	"github.com/outboxd/outboxd/internal/domain/fairness"
	"github.com/outboxd/outboxd/internal/domain/feed"
	"github.com/outboxd/outboxd/internal/domain/flow"
	"github.com/outboxd/outboxd/internal/domain/grant"
	"github.com/outboxd/outboxd/internal/domain/intent"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/invocation/invocationstore"
	"github.com/outboxd/outboxd/internal/domain/invocation/waits"
	"github.com/outboxd/outboxd/internal/domain/preview/previewstore"
	"github.com/outboxd/outboxd/internal/domain/relay"
	"github.com/outboxd/outboxd/internal/domain/relay/slackapproval"
	"github.com/outboxd/outboxd/internal/domain/relay/webhook"
	"github.com/outboxd/outboxd/internal/domain/retention"
	"github.com/outboxd/outboxd/internal/domain/revocation"
	"github.com/outboxd/outboxd/internal/domain/settings"
	"github.com/outboxd/outboxd/internal/mcpfront"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/internal/platform/httpserver"
	"github.com/outboxd/outboxd/internal/platform/secretbox"
	"github.com/outboxd/outboxd/internal/platform/telemetry"
	"github.com/outboxd/outboxd/internal/platform/tracing"
	"github.com/outboxd/outboxd/outbox"
	"github.com/outboxd/outboxd/policy"
	"github.com/outboxd/outboxd/worker"
)

// Role is which half of outboxd a process runs.
type Role string

const (
	RoleAll    Role = "all"    // API and workers
	RoleAPI    Role = "api"    // HTTP API only; inserts jobs, never works them
	RoleWorker Role = "worker" // River workers only; serves /healthz, /readyz and /metrics
)

// ParseRole validates a --role value.
func ParseRole(s string) (Role, error) {
	switch r := Role(s); r {
	case RoleAll, RoleAPI, RoleWorker:
		return r, nil
	}
	return "", fmt.Errorf("invalid role %q: use all, api or worker", s)
}

// Config is the whole process configuration, filled from viper in cmd.
type Config struct {
	HTTPAddr string
	// HTTP bounds the HTTP server's connections (timeouts, max_conns, the
	// per-address cap on unauthenticated requests); every role serves on it.
	HTTP httpserver.Config
	// JWTSecret is auth.jwt_secret: the HS256 secret tokens are verified
	// and minted with (empty: only an identity provider's tokens are
	// accepted, see Auth).
	JWTSecret string
	// MetricsToken is metrics.token: when set, /metrics answers only a
	// request bearing it (Authorization: Bearer).
	MetricsToken string
	// Auth configures token verification (auth.*): a previous HS256
	// secret, leeway, maximum lifetime and the identity provider. Its
	// Secret follows JWTSecret and its Logger the process's.
	Auth auth.Config
	// SecretsKey is secrets.key: the one key sealing stored secrets, with
	// id secretbox.DefaultKeyID. Set it or SecretsKeys.
	SecretsKey string
	// SecretsKeys is secrets.keys: a keyring, the first key sealing and
	// every one opening (secretbox.NewRing).
	SecretsKeys []secretbox.Key
	// Providers configure the provider sources by id (providers.<id>.*);
	// a provider missing here uses its defaults.
	Providers map[string]executors.ProviderConfig
	// AllowPrivateNetworks lets connectors and databases reach loopback
	// and private addresses (tests, single-tenant deployments).
	AllowPrivateNetworks bool
	// Buckets add to or redefine DefaultBuckets() by name.
	Buckets []flow.BucketConfig
	// BucketMaxOrgShare is the part of a global bucket's concurrency slots
	// one organization may hold (flow.Config.MaxOrgShare). Default 0.75.
	BucketMaxOrgShare float64
	// ConnectorCacheTTL is how long a connector's tool list is cached.
	// Default 5m.
	ConnectorCacheTTL time.Duration
	// TokenSource is "store" (the encrypted credential store) or "broker"
	// (BrokerURL answers token requests).
	TokenSource     string
	BrokerURL       string
	ShutdownTimeout time.Duration
	// MaxOrgConns is database.max_org_conns: how many connections of the
	// API's tenant pool one organization's requests may hold at once
	// (dbutil.ShareByOrg). Default three quarters of the pool.
	MaxOrgConns int
	// OrgConnWait is database.org_conn_wait: how long an API request
	// waits for a connection of its organization's share before it is
	// answered 503 with a Retry-After. Default dbutil.DefaultOrgWait.
	OrgConnWait time.Duration
	// StatementTimeout is database.statement_timeout: how long one
	// statement of the API's tenant pool may run, lock waits included
	// (dbutil.BoundStatements); one cut is answered 503 with a
	// Retry-After. Default dbutil.DefaultStatementTimeout. The owner's
	// pool (workers, River, LISTEN, migrations, retention) is not bounded.
	StatementTimeout time.Duration
	// MaxConnectors is connectors.max_per_org: how many MCP connectors one
	// organization may have. Default connectors.DefaultMaxPerOrg.
	MaxConnectors int
	// MaxDatabases is databases.max_per_org: how many databases one
	// organization may register. Default orgdatabases.DefaultMaxPerOrg.
	MaxDatabases int
	// Plugins configures the plugin action packages (plugins.*).
	Plugins plugin.Config
	// DemoCredential is the demo source's credential, which `outboxd dev`
	// generates and keeps with its secrets (a random one when empty).
	DemoCredential string
	// DemoOrg, when set, adds the demo source (executors/demo) and stores
	// a credential for it in that organization at start. Only `outboxd dev`
	// sets it; it is no configuration key.
	DemoOrg string
	// Time, when set, is River's and the workers' clock (worker.Deps.Time).
	// Only tests set it; it is no configuration key.
	Time   rivertype.TimeGenerator
	Outbox outbox.Config
	Worker worker.Config
	// Streams tunes the event streams (SSE).
	Streams api.StreamConfig
	// Revocations tunes how revoked tokens are learnt of
	// (auth.revocation_refresh); its lifetime and leeway follow Auth's.
	Revocations revocation.Config
	// Webhooks configures webhook delivery; AllowPrivateNetworks follows
	// the connectors' setting.
	Webhooks webhook.Config
	// Slack configures Slack approvals; BaseURL and AllowPrivateNetworks
	// follow the Slack provider's and the connectors' settings.
	Slack slackapproval.Config
	// Approvals is approval.required: the approvals each risk tier needs when an
	// organization's policy does not say (nil Required: one each).
	Approvals approvers.Config
	// MCP tunes the MCP front door (mcp.*).
	MCP mcpfront.Config
	// Tracing configures OpenTelemetry tracing (off by default).
	Tracing tracing.Config
	// Console signs people in to the console with the identity provider
	// (console.oidc.*), when its ClientID is set. Its Issuer follows
	// auth.idp.issuer, its MaxLifetime auth.max_lifetime, its Timeout
	// auth.idp.timeout, its TrustForwarded http.trust_forwarded_for and its
	// Logger the process's.
	Console signin.Config
	// Retention configures the deletion of old finished rows
	// (retention.*); River's finished jobs are Worker's settings.
	Retention retention.Config
}

func (c *Config) validate() error {
	if c.JWTSecret == "" && c.Auth.IdP.Issuer == "" {
		return errors.New("auth.jwt_secret is required (set OUTBOXD_AUTH_JWT_SECRET), unless tokens come from an identity provider (auth.idp.issuer)")
	}
	switch c.TokenSource {
	case "broker":
		if c.JWTSecret == "" {
			return errors.New("tokens.source broker needs auth.jwt_secret: outboxd signs its requests to the broker with it")
		}
	case "", "store":
	default:
		return fmt.Errorf("tokens.source must be store or broker, not %q", c.TokenSource)
	}
	if _, err := c.Keyring(); err != nil {
		return err
	}
	if err := c.Retention.Validate(); err != nil {
		return err
	}
	if c.MaxOrgConns < 0 {
		return fmt.Errorf("database.max_org_conns must be 0 (three quarters of the API's pool) or a positive number, not %d", c.MaxOrgConns)
	}
	switch {
	case c.OrgConnWait < 0:
		return fmt.Errorf("database.org_conn_wait must be 0 (%s) or a positive duration, not %s", dbutil.DefaultOrgWait, c.OrgConnWait)
	case c.StatementTimeout < 0:
		return fmt.Errorf("database.statement_timeout must be 0 (%s) or a positive duration, not %s", dbutil.DefaultStatementTimeout, c.StatementTimeout)
	case c.MaxConnectors < 0:
		return fmt.Errorf("connectors.max_per_org must be 0 (%d) or a positive number, not %d", connectors.DefaultMaxPerOrg, c.MaxConnectors)
	case c.MaxDatabases < 0:
		return fmt.Errorf("databases.max_per_org must be 0 (%d) or a positive number, not %d", orgdatabases.DefaultMaxPerOrg, c.MaxDatabases)
	}
	if c.Console.ClientID != "" && c.Auth.IdP.Issuer == "" {
		return errors.New("console.oidc.client_id needs auth.idp.issuer: the identity provider people sign in to the console with")
	}
	if c.Console.ClientID != "" && slices.Contains(c.Auth.IdP.Audience, c.Console.ClientID) {
		// The provider's ID tokens for the console carry that audience.
		return fmt.Errorf("auth.idp.audience lists console.oidc.client_id (%q): the ID tokens the provider issues to the console would be accepted as API tokens; give API tokens an audience of their own", c.Console.ClientID)
	}
	return nil
}

// Keyring returns the Box of secrets.key or secrets.keys, whichever is set.
func (c *Config) Keyring() (*secretbox.Box, error) {
	switch {
	case c.SecretsKey != "" && len(c.SecretsKeys) > 0:
		return nil, fmt.Errorf("secrets.key and secrets.keys are both set: list the key of secrets.key in secrets.keys (id %q, the id it seals with) and unset secrets.key", secretbox.DefaultKeyID)
	case len(c.SecretsKeys) > 0:
		return secretbox.NewRing(c.SecretsKeys)
	case c.SecretsKey == "":
		return nil, errors.New("secrets.key is required: base64 of 32 random bytes (set OUTBOXD_SECRETS_KEY; `openssl rand -base64 32` makes one), or secrets.keys, a keyring")
	}
	return secretbox.New(c.SecretsKey)
}

// App is a wired process.
type App struct {
	cfg  *Config
	role Role
	pool *pgxpool.Pool
	// tenantPool is the API's: its queries run as dbutil.TenantRole.
	tenantPool *pgxpool.Pool
	// groupPool runs the execute jobs' group statements; nil in role api.
	groupPool *pgxpool.Pool
	logger    *slog.Logger
	River     *river.Client[pgx.Tx]
	Service   *outbox.Service
	Settings  *settings.Service
	feeds     *feed.Service
	Handler   http.Handler
	Registry  *prometheus.Registry
	Sources   *catalog.Catalog
	databases *database.Client
	creds     *credentialstore.Store
	// box seals and opens stored secrets (secrets.key or secrets.keys).
	box *secretbox.Box
	api *api.Server
	// verifier checks every bearer token; Serve closes it. Nil in role
	// worker.
	verifier *auth.Verifier
	// revocations are the revoked tokens; Serve refreshes them in
	// processes that take tokens.
	revocations *revocation.Service
	// httpServer serves Handler.
	httpServer *httpserver.Server
	// stopTracing flushes the spans not yet exported.
	stopTracing tracing.Shutdown
}

// New wires an App on pool. The registry collects outboxd's and the Go
// runtime's metrics.
func New(cfg *Config, role Role, pool *pgxpool.Pool, logger *slog.Logger) (_ *App, err error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	// The pools opened here besides pool; closed again when New fails.
	var pools []*pgxpool.Pool
	defer func() {
		if err != nil {
			for _, p := range pools {
				p.Close()
			}
		}
	}()
	logger = cmp.Or(logger, slog.New(slog.DiscardHandler))
	tracingCfg := cfg.Tracing
	tracingCfg.Logger = logger
	tracer, stopTracing, err := tracing.New(context.Background(), &tracingCfg)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = stopTracing(context.Background())
		}
	}()
	if tracing.On(tracer) {
		logger = slog.New(tracing.LogHandler(logger.Handler()))
	}
	box, err := cfg.Keyring()
	if err != nil {
		return nil, err
	}
	registry, err := executors.Build(Providers, cfg.Providers)
	if err != nil {
		return nil, err
	}
	if cfg.DemoOrg != "" {
		registry.Add(demo.New(&demo.Config{Logger: logger}), "")
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := telemetry.New(reg)
	telemetry.RegisterQueueCollector(reg, pool, logger)

	mcpClient, err := mcp.New(&mcp.Config{
		AllowPrivateNetworks: cfg.AllowPrivateNetworks, CacheTTL: cfg.ConnectorCacheTTL, ObserveList: metrics.ObserveConnectorList,
	})
	if err != nil {
		return nil, err
	}

	// The databases organizations register: one small pool per database,
	// closed when idle and at shutdown.
	// A registered database that is outboxd's own is refused at every
	// connection, whatever URL leads there. A server that keeps its
	// identity from outboxd's role (pg_control_system revoked) cannot be
	// checked, and the log says so.
	own, ownErr := database.IdentityOf(context.Background(), pool)
	if ownErr != nil {
		logger.Warn("cannot read this database's identity: registered databases are not checked against it", "err", ownErr)
	}
	databases := database.New(&database.Config{AllowPrivateNetworks: cfg.AllowPrivateNetworks, Own: own})

	// The API works through its own pool, as the tenant role: whatever it
	// reads or writes is limited to the caller's organization by the
	// database (row-level security), whatever filter a query forgets.
	// It opens at most the API's share of connections; the base pool, which
	// opens connections only as they are used, keeps serving the workers,
	// River, readiness and metrics.
	tenantConfig := pool.Config()
	tenantConfig.MaxConns = min(tenantConfig.MaxConns, PoolSize(RoleAPI, 0, runtime.GOMAXPROCS(0)))
	// One organization may hold at most three quarters of it, so that its
	// requests waiting in the database never leave the others none; a
	// request waits for its share at most database.org_conn_wait, and a
	// statement runs at most database.statement_timeout.
	dbutil.ShareByOrg(tenantConfig, cmp.Or(cfg.MaxOrgConns, dbutil.OrgShare(tenantConfig.MaxConns)), cfg.OrgConnWait)
	dbutil.BoundStatements(tenantConfig, cfg.StatementTimeout)
	tenantPool, err := dbutil.TenantPool(context.Background(), tenantConfig)
	if err != nil {
		return nil, err
	}
	pools = append(pools, tenantPool)
	// Revoked tokens are refused by the verifier: the API stores
	// revocations through the tenant pool, every process loads them all
	// through the owner's.
	revCfg := cfg.Revocations
	revCfg.MaxLifetime, revCfg.Leeway, revCfg.Logger = cfg.Auth.MaxLifetime, cfg.Auth.Leeway, logger
	revocations, err := revocation.New(&revocation.Deps{Pool: tenantPool, Owner: pool}, &revCfg)
	if err != nil {
		return nil, err
	}
	// A worker process serves no route that takes a token: it has no
	// verifier, and does not depend on the identity provider to start.
	var verifier *auth.Verifier
	if role != RoleWorker {
		authCfg := cfg.Auth
		authCfg.Secret = cfg.JWTSecret
		authCfg.Logger = logger
		authCfg.Revocations = revocations
		if verifier, err = auth.New(context.Background(), &authCfg); err != nil {
			return nil, err
		}
		defer func() {
			if err != nil {
				verifier.Close()
			}
		}()
	}
	// Console sign-in, in the processes that serve the console.
	var console api.ConsoleSignIn
	if role != RoleWorker && cfg.Console.ClientID != "" {
		consoleCfg := cfg.Console
		consoleCfg.Issuer = cfg.Auth.IdP.Issuer
		consoleCfg.MaxLifetime = cfg.Auth.MaxLifetime
		consoleCfg.TrustForwarded = cfg.HTTP.TrustForwardedFor
		consoleCfg.Timeout = cfg.Auth.IdP.Timeout
		consoleCfg.Logger = logger
		if console, err = signin.New(context.Background(), &signin.Deps{Box: box, Identity: verifier}, &consoleCfg); err != nil {
			return nil, err
		}
	}
	// Each service is built once. One that serves both the API and the
	// workers gets both pools, and each of its methods uses the one its
	// role needs: the tenant pool for what the API does for a caller, the
	// owner's for what the workers do for every organization.
	creds := credentialstore.New(tenantPool, pool, box)
	sources := catalog.New(registry)
	limiter, err := flow.New(pool, &flow.Config{
		Buckets: cfg.RateBuckets(),
		// A lease outlives any job that holds it; a dead process's leases
		// come back soon after its jobs would have timed out.
		LeaseTTL: cfg.Worker.WithDefaults().JobTimeout() + 5*time.Second,
		// A job refused a concurrency slot comes back about when a call
		// could have finished.
		ConcurrencyRetry: cmp.Or(cfg.Worker.PollInterval, 100*time.Millisecond),
		MaxOrgShare:      cfg.BucketMaxOrgShare,
	})
	if err != nil {
		return nil, fmt.Errorf("buckets: %w", err)
	}
	var tokens worker.TokenSource = creds
	if cfg.TokenSource == "broker" {
		broker, err := credential.NewBroker(&credential.BrokerConfig{
			URL: cfg.BrokerURL,
			ServiceToken: func(org string) (string, error) {
				return auth.MintForBroker(cfg.JWTSecret, org, 5*time.Minute)
			},
		})
		if err != nil {
			return nil, err
		}
		tokens = &brokerWithConnectors{broker: broker, store: creds}
	}
	whcfg := cfg.Webhooks
	whcfg.AllowPrivateNetworks = cfg.AllowPrivateNetworks
	// The relays' jobs of an organization past its fair rate queue behind
	// other organizations', as its invocations' do (limits.org_fair_rate).
	fairCfg := cfg.Outbox.WithDefaults()
	webhooks, err := webhook.New(&webhook.Deps{
		Pool: tenantPool, Owner: pool, Box: box, Flow: limiter, Metrics: metrics, Logger: logger,
		Payload: func(item *invocation.FeedItem) any { return api.Notice(item) },
		Fair:    fairness.NewMeter(fairCfg.FairRate, fairCfg.FairBurst),
	}, &whcfg)
	if err != nil {
		return nil, err
	}
	slackCfg := cfg.Slack
	slackCfg.BaseURL = cfg.Providers[slack.SourceID].BaseURL
	slackCfg.AllowPrivateNetworks = cfg.AllowPrivateNetworks
	trail := audit.New(tenantPool)
	// An approval short of the count updates the request's Slack message
	// through a job inserted with the River client (made below).
	var (
		client         *river.Client[pgx.Tx]
		slackApprovals *slackapproval.Service
	)
	approvalSvc := approvers.New(&approvers.Deps{Pool: tenantPool, Audit: trail,
		Progressed: func(ctx context.Context, tx pgx.Tx, inv *invocation.Invocation) error {
			return slackApprovals.QueueUpdate(client)(ctx, tx, inv)
		}}, &cfg.Approvals)
	slackApprovals, err = slackapproval.New(&slackapproval.Deps{Pool: tenantPool, Owner: pool, Tokens: tokens, Metrics: metrics, Logger: logger, Audit: trail,
		Approvals: approvalSvc, Fair: fairness.NewMeter(fairCfg.FairRate, fairCfg.FairBurst)}, &slackCfg)
	if err != nil {
		return nil, err
	}
	// One relay feeds notices to every consumer.
	relays := relay.New(pool)
	relays.Add(webhooks.Consumer())
	relays.Add(slackApprovals.Consumer())
	// Sealed intents: the API reads a stored credential at creation as
	// the caller's organization; a worker has the token of its call.
	brokered := cfg.TokenSource == "broker"
	workerDeps := &worker.Deps{
		Intents: intent.New(&intent.Deps{MAC: box, Broker: brokered}),
		Pool:    pool, Sources: sources, Tokens: tokens, Box: box, Flow: limiter, Metrics: metrics, Logger: logger,
		Jobs: []worker.JobSet{relays, webhooks, slackApprovals}, Secrets: ownSecrets(cfg, pool), Time: cfg.Time,
		Tracer: tracer,
	}
	if role != RoleAPI {
		keep, err := retention.New(&retention.Deps{Pool: pool, Registerer: reg, Logger: logger}, &cfg.Retention)
		if err != nil {
			return nil, err
		}
		workerDeps.Jobs = append(workerDeps.Jobs, keep)
	}
	var groupPool *pgxpool.Pool
	if role != RoleAPI {
		// The execute jobs' begins and completions, planned once per
		// connection (see dbutil.IndexPool).
		if groupPool, err = dbutil.IndexPool(context.Background(), pool.Config(), worker.GroupConns); err != nil {
			return nil, err
		}
		pools = append(pools, groupPool)
		workerDeps.Groups = groupPool
	}
	client, err = worker.NewClient(workerDeps, &cfg.Worker, role != RoleAPI)
	if err != nil {
		return nil, err
	}
	// A revocation withdraws the invocations the revoked tokens asked for
	// that have not started, and deschedules their jobs with the client.
	revocations.SetInvocations(invocationstore.New(client))
	// A revocation by subject removes the Slack approvers mapped to the
	// person too (their clicks carry no token), and revokes their grants.
	revocations.SetPeople(slackApprovals, grant.Offboarding{Trail: trail})
	// The event feeds read through the tenant pool and LISTEN through the
	// owner's, for every organization with subscribers.
	feeds := feed.New(&feed.Deps{Pool: tenantPool, Listeners: pool, Metrics: metrics, Logger: logger})
	grants := grant.NewService(tenantPool)
	settingsSvc := settings.New(&settings.Deps{Pool: tenantPool, Credentials: creds, Providers: registry, Flow: limiter, Audit: trail, Grants: grants})
	deps := &outbox.Deps{
		Pool: tenantPool, Waiter: feeds, River: client, Sources: sources,
		Box: box, Flow: limiter, Metrics: metrics, Logger: logger, Tracer: tracer, Approvals: approvalSvc, Trail: trail,
		Intents: intent.New(&intent.Deps{MAC: box, Tokens: callerTokens{creds}, Broker: brokered}),
	}
	svc, err := outbox.New(deps, &cfg.Outbox)
	if err != nil {
		return nil, err
	}
	// The org-registered source kinds, in the order the catalog lists
	// them: each store writes through the tenant pool and looks sources up
	// for the workers through pool.
	orgDatabases := orgdatabases.New(databasestore.New(tenantPool, pool, creds), databases, creds, grants, cfg.MaxDatabases)
	orgConnectors := connectors.New(&connectors.Deps{
		Store: mcpstore.New(tenantPool, pool, creds), Client: mcpClient, Secrets: creds, MaxPerOrg: cfg.MaxConnectors,
		Modes: func(ctx context.Context, org string) (map[string]policy.Mode, error) {
			return settingsSvc.GetModes(ctx, org, "")
		},
		Grants: grants,
	})
	for _, k := range []catalog.Kind{orgDatabases.Kind(), orgConnectors.Kind()} {
		if err := sources.Register(k); err != nil {
			return nil, err
		}
	}
	pluginCfg := cfg.Plugins
	pluginCfg.AllowPrivateNetworks = cfg.AllowPrivateNetworks
	pluginCfg.Logger = logger
	if err := addPlugins(&pluginCfg, sources); err != nil {
		return nil, err
	}
	// A token broker decides at call time which integrations a caller
	// has: the catalog then lists every provider.
	var stored catalog.CredentialLister = creds
	if cfg.TokenSource == "broker" {
		stored = nil
	}
	reader := catalog.NewReader(sources, stored, settingsSvc, logger)
	// A stream ends at its token's exp plus the leeway the verifier
	// allows, so a reconnect then is refused, or once the token is revoked.
	tokenEnds := func(ctx context.Context, c *auth.Claims) (context.Context, func()) {
		return revocation.Ends(ctx, revocations, c, verifier.Leeway())
	}
	server := api.New(&api.Deps{
		Service: svc, Catalog: reader, Settings: settingsSvc, Feeds: feeds, Connectors: orgConnectors, Databases: orgDatabases,
		Admin: admin.New(&admin.Deps{Pool: tenantPool, Owner: pool, River: client, Flow: limiter,
			Retention: cfg.Retention.Keep(), Logger: logger}),
		SyncWait: cfg.Outbox.WithDefaults().SyncWait, Verifier: verifier, Pool: pool, Gatherer: reg, MetricsToken: cfg.MetricsToken, Logger: logger, Streams: cfg.Streams,
		Webhooks: webhooks, Slack: slackApprovals, SlackClicks: slackApprovals.Clicks(svc), Approvers: approvalSvc,
		MCP: mcpfront.New(&mcpfront.Deps{Outbox: svc, Waits: waits.New(tenantPool, cfg.Outbox.WithDefaults().SyncWait, logger), Catalog: reader, Changes: feeds, Config: mcpConfig(cfg, logger),
			Metrics: metrics, Logger: logger, Wait: cfg.Outbox.WithDefaults().SyncWait, Approvals: approvalSvc, TokenEnds: tokenEnds}),
		Unauthenticated: httpserver.NewAddrLimiter(&cfg.HTTP),
		OrgRequests:     httpserver.NewOrgLimiter(&cfg.HTTP),
		Revocations:     revocations,
		Audit:           trail, TrustForwardedFor: cfg.HTTP.TrustForwardedFor,
		Console: console, Previews: previewstore.NewReader(tenantPool),
		Grants: grants,
	})
	var handler http.Handler = server.Handler()
	if role == RoleWorker {
		mux := http.NewServeMux()
		for _, path := range []string{"GET /healthz", "GET /readyz", "GET /metrics"} {
			mux.Handle(path, handler)
		}
		handler = mux
	}
	httpServer, err := httpserver.New(tracing.Handler(tracer, handler), &cfg.HTTP, reg)
	if err != nil {
		return nil, err
	}
	return &App{
		cfg: cfg, role: role, pool: pool, tenantPool: tenantPool, groupPool: groupPool, logger: logger,
		River: client, Service: svc, Settings: settingsSvc, feeds: feeds, Handler: handler, Registry: reg, Sources: sources, databases: databases, creds: creds, box: box, api: server,
		verifier: verifier, revocations: revocations,
		httpServer: httpServer, stopTracing: stopTracing,
	}, nil
}

// NewOps wires the administration for command-line operations (dead
// letters, queues) on pool, as the API's: an insert-only River client, a
// tenant pool for an organization's dead letters, and no sources, so it
// needs neither auth.jwt_secret nor secrets.key. Call close when done.
func NewOps(cfg *Config, pool *pgxpool.Pool, logger *slog.Logger) (ops *admin.Service, close func(), err error) {
	logger = cmp.Or(logger, slog.New(slog.DiscardHandler))
	client, err := worker.NewClient(&worker.Deps{Pool: pool, Metrics: telemetry.NewNop(), Logger: logger}, &cfg.Worker, false)
	if err != nil {
		return nil, nil, err
	}
	tenantPool, err := dbutil.TenantPool(context.Background(), pool.Config())
	if err != nil {
		return nil, nil, err
	}
	return admin.New(&admin.Deps{Pool: tenantPool, Owner: pool, River: client, Logger: logger}), tenantPool.Close, nil
}

// CheckSecrets fails with credential.ErrKeyChanged when the stored
// credentials were sealed with another secrets.key.
func (a *App) CheckSecrets(ctx context.Context) error {
	return a.creds.CheckKey(ctx)
}

// Run serves until ctx is cancelled, then shuts down gracefully: it stops
// taking requests, lets running jobs finish within the shutdown timeout
// (cancelling them after it), and returns nil. ready, when not nil, is
// called with the listening address once the process serves.
func (a *App) Run(ctx context.Context, ready func(addr string)) error {
	ln, err := net.Listen("tcp", a.cfg.HTTPAddr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("listening on %s: the address is taken (is outboxd already running?); "+
			"pick another with --http-addr or OUTBOXD_HTTP_ADDR, e.g. OUTBOXD_HTTP_ADDR=127.0.0.1:8081", a.cfg.HTTPAddr)
	}
	if err != nil {
		return fmt.Errorf("listening on %s: %w", a.cfg.HTTPAddr, err)
	}
	return a.Serve(ctx, ln, ready)
}

// Serve is Run on an existing listener. It refuses to start when the
// stored credentials do not open with secrets.key (see CheckSecrets), and
// warns of other stored secrets that no key opens.
func (a *App) Serve(ctx context.Context, ln net.Listener, ready func(addr string)) error {
	// Last: the spans of the requests and jobs that ended above.
	defer a.flushTraces()
	defer a.tenantPool.Close()
	defer a.verifier.Close()
	if a.groupPool != nil {
		defer a.groupPool.Close()
	}
	// After the workers stopped: no call holds a database pool any more.
	defer a.databases.Close()
	if err := a.CheckSecrets(ctx); err != nil {
		ln.Close()
		return fmt.Errorf("refusing to start: %w; start with the secrets.key they were sealed with", err)
	}
	// Older values may still be sealed with a key removed since.
	warnUnreadableSecrets(ctx, a.pool, a.box, a.logger)
	if a.cfg.DemoOrg != "" {
		// Put writes through the tenant pool, as the demo organization.
		_, err := a.creds.Put(dbutil.WithOrg(ctx, a.cfg.DemoOrg), credential.Request{Org: a.cfg.DemoOrg, Integration: demo.SourceID},
			credential.Token{Value: cmp.Or(a.cfg.DemoCredential, secretbox.NewKey())}, "outboxd dev")
		if err != nil {
			ln.Close()
			return err
		}
	}
	runCtx, stopRun := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRun()

	// The listener serves requests that wait (synchronous invokes, event
	// streams); a worker process takes none, so it does not LISTEN, and
	// its backend does not wake for every notification in the database.
	listenerDone := make(chan struct{})
	if a.role == RoleWorker {
		close(listenerDone)
	} else {
		// The revocations are loaded before the first request is taken.
		if err := a.revocations.Refresh(ctx); err != nil {
			a.logger.WarnContext(ctx, "token revocations: first load failed; retried every auth.revocation_refresh", "error", err)
		}
		go func() {
			defer close(listenerDone)
			revocationsDone := make(chan struct{})
			go func() {
				defer close(revocationsDone)
				a.revocations.Run(runCtx)
			}()
			a.feeds.Run(runCtx)
			<-revocationsDone
		}()
	}

	if a.role != RoleAPI {
		if err := a.River.Start(runCtx); err != nil {
			ln.Close()
			stopRun()
			<-listenerDone
			return fmt.Errorf("starting workers: %w", err)
		}
	}

	srv := a.httpServer
	srv.RegisterOnShutdown(a.api.CloseStreams)
	// Waiting invokes answer at once with where their invocations stand,
	// as the MCP front door's waits do.
	srv.RegisterOnShutdown(a.Service.StopWaiting)
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	a.logger.InfoContext(ctx, "outboxd serving", "role", a.role, "addr", ln.Addr().String(), "max_conns", srv.Config().MaxConns)
	if ready != nil {
		ready(ln.Addr().String())
	}

	var runErr error
	select {
	case <-ctx.Done():
	case err := <-serveErr:
		runErr = fmt.Errorf("http server: %w", err)
	}

	timeout := cmp.Or(a.cfg.ShutdownTimeout, DefaultShutdownTimeout)
	a.logger.InfoContext(ctx, "shutting down", "timeout", timeout)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		a.logger.WarnContext(ctx, "http shutdown", "error", err)
	}
	if a.role != RoleAPI {
		if err := a.River.Stop(shutdownCtx); err != nil {
			a.logger.WarnContext(ctx, "running jobs did not finish in time; cancelling them", "error", err)
			hardCtx, hardCancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = a.River.StopAndCancel(hardCtx)
			hardCancel()
		}
	}
	stopRun()
	<-listenerDone
	a.logger.InfoContext(ctx, "outboxd stopped")
	return runErr
}

// flushTraces exports the spans not yet exported and stops the exporter.
func (a *App) flushTraces() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.stopTracing(ctx); err != nil {
		a.logger.Warn("flushing traces", "error", err)
	}
}

// callerTokens reads stored credentials as the caller's organization, in
// the transaction of the intent it is for (the tenant pool's).
type callerTokens struct{ store *credentialstore.Store }

func (c callerTokens) Token(ctx context.Context, db dbutil.DB, req credential.Request) (credential.Token, error) {
	if db == nil {
		return c.store.CallerToken(ctx, req, false)
	}
	return c.store.TokenIn(ctx, db, req)
}

// brokerWithConnectors resolves provider tokens through the broker, and
// the credentials only outboxd holds (connector secrets, database URLs:
// the request says so, from its source's catalog entry) through the store.
type brokerWithConnectors struct {
	broker *credential.Broker
	store  *credentialstore.Store
}

func (b *brokerWithConnectors) Token(ctx context.Context, req credential.Request, refresh bool) (credential.Token, error) {
	if req.Local {
		return b.store.Token(ctx, req, refresh)
	}
	return b.broker.Token(ctx, req, refresh)
}

// addPlugins loads the plugin packages of cfg, when plugins.dir is set,
// and adds their source to c: it needs no credential and is disabled
// while code execution is off. A plugin may take neither the id of a
// provider nor the name of one of its actions, nor the prefix of a kind
// registered with c, so register the kinds first.
func addPlugins(cfg *plugin.Config, c *catalog.Catalog) error {
	if cfg.Dir == "" {
		return nil
	}
	registry := c.Static()
	if _, taken := registry.Source(plugin.SourceID); taken {
		return fmt.Errorf("plugins: a provider already has the source id %q", plugin.SourceID)
	}
	reserved := plugin.Reserved{}
	for _, prefix := range c.Prefixes() {
		reserved[strings.TrimSuffix(prefix, ":")] = nil
	}
	for _, id := range registry.IDs() {
		src, _ := registry.Source(id)
		defs, err := src.ListActions(context.Background(), executors.ExecContext{})
		if err != nil {
			return fmt.Errorf("plugins: listing the actions of %s: %w", id, err)
		}
		reserved[id] = nil
		for _, d := range defs {
			reserved[id] = append(reserved[id], d.ID)
		}
	}
	plugins, err := plugin.Load(cfg, reserved)
	if err != nil {
		return err
	}
	return c.Add(&catalog.Source{Source: plugins, Name: "Plugins", Bucket: plugin.Bucket.Name, Disabled: plugins.Disabled()})
}

// RateBuckets returns the rate buckets in force: DefaultBuckets(), each
// redefined by the configured bucket of its name, then the configured
// buckets of other names. The workers limit by them and org purge tells
// whose each bucket row is by their scopes.
func (c *Config) RateBuckets() []flow.BucketConfig {
	return mergeBuckets(DefaultBuckets(), c.Buckets)
}

// mergeBuckets returns defaults with every bucket of overrides replacing the
// default of the same name or added after them.
func mergeBuckets(defaults, overrides []flow.BucketConfig) []flow.BucketConfig {
	out := append([]flow.BucketConfig(nil), defaults...)
	for _, o := range overrides {
		replaced := false
		for i := range out {
			if out[i].Name == o.Name {
				out[i], replaced = o, true
			}
		}
		if !replaced {
			out = append(out, o)
		}
	}
	return out
}

// mcpConfig is the front door's configuration, its session limit derived
// from the organization's share of requests when unset. A limit set at or
// above that share is kept, and said at start: sessions that keep a stream
// open could then take the whole share, and leave their organization's
// next requests refused with 429.
func mcpConfig(cfg *Config, logger *slog.Logger) mcpfront.Config {
	out := cfg.MCP
	maxOrg := cfg.HTTP.WithDefaults().MaxOrgRequests
	switch {
	case out.MaxSessions == 0:
		out.MaxSessions = mcpfront.DefaultMaxSessions(maxOrg)
	case out.MaxSessions >= maxOrg && !out.Stateless:
		logger.Warn("mcp.max_sessions is not below http.max_org_requests: an organization's sessions that keep a stream open can take all its requests in progress, and its next requests get 429",
			"max_sessions", out.MaxSessions, "max_org_requests", maxOrg)
	}
	return out
}
