package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cast"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/outboxd/outboxd/executors"
	orgdatabases "github.com/outboxd/outboxd/executors/database/databases"
	"github.com/outboxd/outboxd/executors/mcp"
	"github.com/outboxd/outboxd/executors/mcp/connectors"
	"github.com/outboxd/outboxd/executors/plugin"
	"github.com/outboxd/outboxd/internal/app"
	"github.com/outboxd/outboxd/internal/domain/approvers"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/auth/idp"
	"github.com/outboxd/outboxd/internal/domain/auth/signin"
	"github.com/outboxd/outboxd/internal/domain/flow"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/relay/slackapproval"
	"github.com/outboxd/outboxd/internal/domain/relay/webhook"
	"github.com/outboxd/outboxd/internal/domain/retention"
	"github.com/outboxd/outboxd/internal/domain/revocation"
	"github.com/outboxd/outboxd/internal/mcpfront"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/internal/platform/httpserver"
	"github.com/outboxd/outboxd/internal/platform/secretbox"
	"github.com/outboxd/outboxd/internal/platform/tracing"
	"github.com/outboxd/outboxd/outbox"
	"github.com/outboxd/outboxd/policy"
	"github.com/outboxd/outboxd/worker"
)

// defaults lists every configuration key with its default. The values are
// the owning packages' (their WithDefaults and Default* constants), the
// providers' keys (providers.<id>.*) are taken from their registrations,
// and only the keys whose zero value is the default, and the logger's, are
// written here. It is the one list: configs/outboxd.example.yaml documents
// the same keys, and tests check the example and the documentation's tables
// agree with it.
var defaults = func() map[string]any {
	httpd := httpserver.Config{}.WithDefaults()
	ob := (&outbox.Config{}).WithDefaults()
	w := (&worker.Config{}).WithDefaults()
	hooks := (&webhook.Config{}).WithDefaults()
	front := mcpfront.Config{}.WithDefaults()
	claims := auth.ClaimNames{}.WithDefaults()
	keep := (&retention.Config{}).WithDefaults()
	return withProviderDefaults(map[string]any{
		"database.url":                      "",
		"database.max_conns":                0, // sized from the role
		"database.max_org_conns":            0, // three quarters of the API's tenant pool
		"database.org_conn_wait":            dbutil.DefaultOrgWait,
		"database.statement_timeout":        dbutil.DefaultStatementTimeout,
		"http.addr":                         app.DefaultHTTPAddr,
		"metrics.token":                     "",
		"http.read_header_timeout":          httpd.ReadHeaderTimeout,
		"http.read_timeout":                 httpd.ReadTimeout,
		"http.write_timeout":                httpd.WriteTimeout,
		"http.idle_timeout":                 httpd.IdleTimeout,
		"http.max_conns":                    0, // derived from the open-file limit
		"http.max_org_requests":             0, // three quarters of http.max_conns
		"http.unauthenticated_rate":         float64(httpserver.DefaultUnauthenticatedRate),
		"http.unauthenticated_burst":        httpd.UnauthenticatedBurst,
		"http.trust_forwarded_for":          false,
		"auth.jwt_secret":                   "",
		"auth.jwt_secret_previous":          "",
		"auth.jwt_secret_previous_until":    "",
		"auth.leeway":                       auth.DefaultLeeway,
		"auth.max_lifetime":                 time.Duration(0), // no maximum
		"auth.revocation_refresh":           revocation.DefaultRefreshInterval,
		"auth.idp.issuer":                   "",
		"auth.idp.jwks_url":                 "", // discovered from the issuer
		"auth.idp.audience":                 []any{},
		"auth.idp.refresh_interval":         idp.DefaultRefreshInterval,
		"auth.idp.unknown_kid_interval":     idp.DefaultUnknownKIDInterval,
		"auth.idp.timeout":                  idp.DefaultTimeout,
		"auth.idp.claims.subject":           claims.Subject,
		"auth.idp.claims.org":               claims.Org,
		"auth.idp.claims.kind":              claims.Kind,
		"auth.idp.claims.role":              claims.Role,
		"auth.idp.claims.session_id":        claims.SessionID,
		"auth.idp.claims.automation_id":     claims.AutomationID,
		"auth.idp.claims.user_id":           claims.UserID,
		"auth.idp.claims.sources":           claims.Sources,
		"auth.idp.defaults.org":             "",
		"auth.idp.defaults.kind":            "",
		"auth.idp.defaults.role":            "",
		"console.oidc.client_id":            "",                                  // no console sign-in
		"console.oidc.client_secret":        "",                                  // a public client
		"console.oidc.redirect_url":         "",                                  // derived from each request
		"console.oidc.scopes":               []any{"openid", "profile", "email"}, // signin.DefaultScopes
		"secrets.key":                       "",
		"secrets.keys":                      []any{},
		"tokens.source":                     app.DefaultTokenSource,
		"connectors.allow_private_networks": false,
		"buckets":                           []any{},
		"bucket_max_org_share":              0.0, // flow.DefaultMaxOrgShare, three quarters
		"connectors.tools_cache_ttl":        mcp.DefaultCacheTTL,
		"connectors.max_per_org":            connectors.DefaultMaxPerOrg,
		"databases.max_per_org":             orgdatabases.DefaultMaxPerOrg,
		"tokens.broker_url":                 "",
		"approval.interactive_ttl":          ob.InteractiveTTL,
		"approval.unattended_ttl":           ob.UnattendedTTL,
		"limits.pending_per_session":        ob.PendingPerSession,
		"limits.invokes_per_minute":         ob.InvokesPerMinute,
		"limits.org_fair_rate":              ob.FairRate,
		"limits.org_fair_burst":             ob.FairBurst,

		"sync_wait":                          ob.SyncWait,
		"mcp.stateless":                      false,
		"mcp.session_timeout":                front.SessionTimeout,
		"mcp.max_sessions":                   0, // half of http.max_org_requests, at most 1000
		"mcp.recheck_interval":               front.Recheck,
		"worker.max_workers":                 w.MaxWorkers,
		"worker.max_org_workers":             0, // three quarters of worker.max_workers
		"worker.max_attempts":                w.MaxAttempts,
		"worker.retry_base_delay":            w.RetryBaseDelay,
		"worker.retry_max_delay":             w.RetryMaxDelay,
		"worker.call_timeout":                w.CallTimeout,
		"worker.rescue_after":                time.Duration(0), // derived from call_timeout
		"worker.bookkeeping_retry":           w.BookkeepingRetry,
		"worker.max_provider_waits":          w.MaxProviderWaits,
		"worker.sweep_interval":              w.SweepInterval,
		"worker.poll_interval":               w.PollInterval,
		"worker.fetch_cooldown":              time.Duration(0), // 25ms, or poll_interval if shorter
		"worker.pause_recheck":               w.PauseRecheck,
		"retention.invocations":              keep.Invocations,
		"retention.webhook_deliveries":       keep.WebhookDeliveries,
		"retention.audit_entries":            keep.AuditEntries,
		"retention.interval":                 keep.Interval,
		"retention.batch":                    keep.Batch,
		"retention.budget":                   keep.Budget,
		"retention.jobs_completed":           w.CompletedJobRetention,
		"retention.jobs_cancelled":           w.CancelledJobRetention,
		"retention.jobs_discarded":           w.DiscardedJobRetention,
		"webhooks.max_attempts":              hooks.MaxAttempts,
		"webhooks.retry_base_delay":          hooks.RetryBaseDelay,
		"webhooks.retry_max_delay":           hooks.RetryMaxDelay,
		"webhooks.timeout":                   hooks.Timeout,
		"webhooks.disable_after":             hooks.DisableAfter,
		"webhooks.max_workers":               hooks.MaxWorkers,
		"webhooks.max_org_workers":           0, // a quarter of webhooks.max_workers
		"webhooks.max_endpoints":             hooks.MaxEndpoints,
		"approval.required":                  map[string]any{"r4": 2}, // approvers.DefaultRequired
		"notifications.slack.channel":        "",
		"notifications.slack.signing_secret": "",
		"plugins.dir":                        "",
		"plugins.allow_code_execution":       false,
		"plugins.command_allowlist":          []any{},
		"plugins.timeout":                    plugin.DefaultTimeout,
		"plugins.max_output_bytes":           plugin.DefaultMaxOutputBytes,
		"plugins.max_memory_bytes":           plugin.DefaultMaxMemoryBytes,
		"plugins.max_workspace_bytes":        plugin.DefaultMaxWorkspaceBytes,
		"plugins.max_workspace_files":        plugin.DefaultMaxWorkspaceFiles,
		"plugins.allow_unsandboxed":          false,
		"tracing.enabled":                    false,
		"tracing.endpoint":                   "",  // OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, else localhost
		"tracing.protocol":                   "",  // OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL, else http/protobuf
		"tracing.sample_ratio":               0.0, // OTEL_TRACES_SAMPLER, else every trace
		"tracing.service_name":               "",  // OTEL_SERVICE_NAME, else outboxd
		"shutdown_timeout":                   app.DefaultShutdownTimeout,
		"log.level":                          "info",
		"log.format":                         "text",
	})
}()

// keepFor reads a retention key: 0 keeps forever, which the typed configs
// (River's too) spell -1, their 0 being the default. A negative value is
// refused by checkRetentions, as -1ns would read as that -1.
func keepFor(v *viper.Viper, key string) time.Duration {
	if d := v.GetDuration(key); d != 0 {
		return d
	}
	return retention.Forever
}

// retentionKeys are the keys keepFor reads.
var retentionKeys = []string{
	"retention.invocations", "retention.webhook_deliveries", "retention.audit_entries",
	"retention.jobs_completed", "retention.jobs_cancelled", "retention.jobs_discarded",
}

// checkRetentions refuses a negative retention: only 0 keeps forever.
func checkRetentions(v *viper.Viper) error {
	for _, key := range retentionKeys {
		if d := v.GetDuration(key); d < 0 {
			return fmt.Errorf("%s (%s) is %s: a retention must not be negative (0 keeps forever)", key, envOf(key), d)
		}
	}
	return nil
}

// withProviderDefaults adds the keys of every provider in app.Providers to
// keys.
func withProviderDefaults(keys map[string]any) map[string]any {
	for _, p := range app.Providers {
		keys["providers."+p.ID+".base_url"] = p.DefaultBaseURL
	}
	return keys
}

// providerConfigs reads providers.<id>.* for every provider in
// app.Providers.
func providerConfigs(v *viper.Viper) map[string]executors.ProviderConfig {
	out := make(map[string]executors.ProviderConfig, len(app.Providers))
	for _, p := range app.Providers {
		out[p.ID] = executors.ProviderConfig{BaseURL: v.GetString("providers." + p.ID + ".base_url")}
	}
	return out
}

// loadConfig builds viper from defaults, the --config file, OUTBOXD_*
// variables (key a.b_c ↔ OUTBOXD_A_B_C; DATABASE_URL also works) and the
// command's flags, in increasing precedence.
func loadConfig(cmd *cobra.Command) (*viper.Viper, error) {
	v := viper.New()
	for k, d := range defaults {
		v.SetDefault(k, d)
	}
	v.SetEnvPrefix("OUTBOXD")
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()
	if err := v.BindEnv("database.url", "OUTBOXD_DATABASE_URL", "DATABASE_URL"); err != nil {
		return nil, err
	}
	if path, _ := cmd.Flags().GetString("config"); path != "" {
		v.SetConfigFile(path)
		if err := v.ReadInConfig(); err != nil {
			return nil, fmt.Errorf("reading config %s: %w", path, err)
		}
		for _, key := range v.AllKeys() {
			if strings.HasPrefix(key, "retry.") || strings.HasPrefix(key, "approval.required.") {
				continue // per-source sections (retryBySource), per-tier counts (requiredApprovals)
			}
			if _, ok := defaults[key]; !ok {
				return nil, fmt.Errorf("config %s: unknown key %q", path, key)
			}
		}
	}
	var bindErr error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if key, ok := f.Annotations["viper"]; ok && bindErr == nil {
			bindErr = v.BindPFlag(key[0], f)
		}
	})
	if bindErr != nil {
		return nil, bindErr
	}
	return v, checkTypes(v)
}

// checkTypes refuses a value that is not of its key's type: viper reads
// one as its type's zero, which for most keys is the default and for some
// a setting of its own ("30d" for retention.invocations, not a Go
// duration, would keep invocations forever).
func checkTypes(v *viper.Viper) error {
	var problems []string
	for key, def := range defaults {
		if !v.IsSet(key) {
			continue
		}
		var err error
		want := ""
		switch def.(type) {
		case time.Duration:
			_, err = cast.ToDurationE(v.Get(key))
			if err == nil && unitless(v.Get(key)) {
				err = errWrongValue
			}
			want = "a duration such as 500ms, 30s, 5m or 720h (a number needs its unit)"
		case int:
			_, err = cast.ToIntE(v.Get(key))
			if f, ok := v.Get(key).(float64); ok && (f != math.Trunc(f) || math.Abs(f) >= 1<<53) {
				err = errWrongValue // 2.5 read as 2, 1e20 as a negative number
			}
			want = "a whole number"
		case float64:
			var f float64
			f, err = cast.ToFloat64E(v.Get(key))
			if err == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
				err = errWrongValue
			}
			want = "a number"
		case bool:
			_, err = cast.ToBoolE(v.Get(key))
			want = "true or false"
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s (%s) is %q, not %s", key, envOf(key), fmt.Sprint(v.Get(key)), want))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	slices.Sort(problems)
	return fmt.Errorf("configuration: %s", strings.Join(problems, "; "))
}

// errWrongValue is a value cast reads, wrongly: checkTypes refuses it.
var errWrongValue = errors.New("wrong value")

// unitless reports a duration written as a number other than 0 (30, "30",
// 1.5): cast reads it as nanoseconds, so "retention.invocations: 30"
// meant for days kept finished invocations 30ns, and the next run
// deleted them all. A time.Duration (a flag's) has its unit.
func unitless(value any) bool {
	switch x := value.(type) {
	case time.Duration:
		return false
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return err == nil && f != 0
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return cast.ToFloat64(x) != 0
	}
	return false
}

// envOf is key's variable (a.b_c ↔ OUTBOXD_A_B_C).
func envOf(key string) string {
	return "OUTBOXD_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// bindFlag marks flag name as setting viper key.
func bindFlag(cmd *cobra.Command, name, key string) {
	_ = cmd.Flags().SetAnnotation(name, "viper", []string{key})
}

// bindPersistentFlag is bindFlag for a flag every subcommand inherits.
func bindPersistentFlag(cmd *cobra.Command, name, key string) {
	_ = cmd.PersistentFlags().SetAnnotation(name, "viper", []string{key})
}

func appConfig(v *viper.Viper) (*app.Config, error) {
	if err := checkRetentions(v); err != nil {
		return nil, err
	}
	cfg := &app.Config{
		HTTPAddr: v.GetString("http.addr"),
		HTTP: httpserver.Config{
			ReadHeaderTimeout:    v.GetDuration("http.read_header_timeout"),
			ReadTimeout:          v.GetDuration("http.read_timeout"),
			WriteTimeout:         v.GetDuration("http.write_timeout"),
			IdleTimeout:          v.GetDuration("http.idle_timeout"),
			MaxConns:             v.GetInt("http.max_conns"),
			MaxOrgRequests:       v.GetInt("http.max_org_requests"),
			UnauthenticatedRate:  v.GetFloat64("http.unauthenticated_rate"),
			UnauthenticatedBurst: v.GetInt("http.unauthenticated_burst"),
			TrustForwardedFor:    v.GetBool("http.trust_forwarded_for"),
		},
		JWTSecret:    v.GetString("auth.jwt_secret"),
		MetricsToken: v.GetString("metrics.token"),
		Auth: auth.Config{
			PreviousSecret: v.GetString("auth.jwt_secret_previous"),
			Leeway:         v.GetDuration("auth.leeway"),
			MaxLifetime:    v.GetDuration("auth.max_lifetime"),
			IdP: auth.IdPConfig{
				Issuer:             v.GetString("auth.idp.issuer"),
				JWKSURL:            v.GetString("auth.idp.jwks_url"),
				Audience:           stringList(v, "auth.idp.audience", isComma),
				RefreshInterval:    v.GetDuration("auth.idp.refresh_interval"),
				UnknownKIDInterval: v.GetDuration("auth.idp.unknown_kid_interval"),
				Timeout:            v.GetDuration("auth.idp.timeout"),
				Claims: auth.ClaimNames{
					Subject:      v.GetString("auth.idp.claims.subject"),
					Org:          v.GetString("auth.idp.claims.org"),
					Kind:         v.GetString("auth.idp.claims.kind"),
					Role:         v.GetString("auth.idp.claims.role"),
					SessionID:    v.GetString("auth.idp.claims.session_id"),
					AutomationID: v.GetString("auth.idp.claims.automation_id"),
					UserID:       v.GetString("auth.idp.claims.user_id"),
					Sources:      v.GetString("auth.idp.claims.sources"),
				},
				Defaults: auth.ClaimDefaults{
					Org:  v.GetString("auth.idp.defaults.org"),
					Kind: auth.Kind(v.GetString("auth.idp.defaults.kind")),
					Role: auth.Role(v.GetString("auth.idp.defaults.role")),
				},
			},
		},
		Console: signin.Config{
			ClientID:     v.GetString("console.oidc.client_id"),
			ClientSecret: v.GetString("console.oidc.client_secret"),
			RedirectURL:  v.GetString("console.oidc.redirect_url"),
			Scopes:       stringList(v, "console.oidc.scopes", isCommaOrSpace),
		},
		SecretsKey:           v.GetString("secrets.key"),
		Providers:            providerConfigs(v),
		TokenSource:          v.GetString("tokens.source"),
		AllowPrivateNetworks: v.GetBool("connectors.allow_private_networks"),
		ConnectorCacheTTL:    v.GetDuration("connectors.tools_cache_ttl"),
		BrokerURL:            v.GetString("tokens.broker_url"),
		ShutdownTimeout:      v.GetDuration("shutdown_timeout"),
		MaxOrgConns:          v.GetInt("database.max_org_conns"),
		OrgConnWait:          v.GetDuration("database.org_conn_wait"),
		StatementTimeout:     v.GetDuration("database.statement_timeout"),
		MaxConnectors:        v.GetInt("connectors.max_per_org"),
		MaxDatabases:         v.GetInt("databases.max_per_org"),
		Revocations:          revocation.Config{RefreshInterval: v.GetDuration("auth.revocation_refresh")},
		Outbox: outbox.Config{
			InteractiveTTL:    v.GetDuration("approval.interactive_ttl"),
			UnattendedTTL:     v.GetDuration("approval.unattended_ttl"),
			PendingPerSession: v.GetInt("limits.pending_per_session"),
			InvokesPerMinute:  v.GetInt("limits.invokes_per_minute"),
			SyncWait:          v.GetDuration("sync_wait"),
			FairRate:          v.GetFloat64("limits.org_fair_rate"),
			FairBurst:         v.GetInt("limits.org_fair_burst"),
		},
		Worker: worker.Config{
			MaxWorkers:       v.GetInt("worker.max_workers"),
			MaxOrgWorkers:    v.GetInt("worker.max_org_workers"),
			MaxAttempts:      v.GetInt("worker.max_attempts"),
			RetryBaseDelay:   v.GetDuration("worker.retry_base_delay"),
			RetryMaxDelay:    v.GetDuration("worker.retry_max_delay"),
			CallTimeout:      v.GetDuration("worker.call_timeout"),
			RescueAfter:      v.GetDuration("worker.rescue_after"),
			BookkeepingRetry: v.GetDuration("worker.bookkeeping_retry"),
			MaxProviderWaits: v.GetInt("worker.max_provider_waits"),
			SweepInterval:    v.GetDuration("worker.sweep_interval"),
			PollInterval:     v.GetDuration("worker.poll_interval"),
			FetchCooldown:    v.GetDuration("worker.fetch_cooldown"),
			PauseRecheck:     v.GetDuration("worker.pause_recheck"),

			CompletedJobRetention: keepFor(v, "retention.jobs_completed"),
			CancelledJobRetention: keepFor(v, "retention.jobs_cancelled"),
			DiscardedJobRetention: keepFor(v, "retention.jobs_discarded"),
		},
		Retention: retention.Config{
			Invocations:       keepFor(v, "retention.invocations"),
			WebhookDeliveries: keepFor(v, "retention.webhook_deliveries"),
			AuditEntries:      keepFor(v, "retention.audit_entries"),
			Interval:          v.GetDuration("retention.interval"),
			Batch:             v.GetInt("retention.batch"),
			Budget:            v.GetDuration("retention.budget"),
		},
		Webhooks: webhook.Config{
			MaxAttempts:    v.GetInt("webhooks.max_attempts"),
			RetryBaseDelay: v.GetDuration("webhooks.retry_base_delay"),
			RetryMaxDelay:  v.GetDuration("webhooks.retry_max_delay"),
			Timeout:        v.GetDuration("webhooks.timeout"),
			DisableAfter:   v.GetDuration("webhooks.disable_after"),
			MaxWorkers:     v.GetInt("webhooks.max_workers"),
			MaxOrgWorkers:  v.GetInt("webhooks.max_org_workers"),
			MaxEndpoints:   v.GetInt("webhooks.max_endpoints"),
		},
		MCP: mcpfront.Config{
			Stateless:      v.GetBool("mcp.stateless"),
			SessionTimeout: v.GetDuration("mcp.session_timeout"),
			MaxSessions:    v.GetInt("mcp.max_sessions"),
			Recheck:        v.GetDuration("mcp.recheck_interval"),
		},
		Slack: slackapproval.Config{
			Channel:       v.GetString("notifications.slack.channel"),
			SigningSecret: v.GetString("notifications.slack.signing_secret"),
		},
		Tracing: tracing.Config{
			Enabled:     v.GetBool("tracing.enabled"),
			Endpoint:    v.GetString("tracing.endpoint"),
			Protocol:    v.GetString("tracing.protocol"),
			SampleRatio: v.GetFloat64("tracing.sample_ratio"),
			ServiceName: v.GetString("tracing.service_name"),
		},
		Plugins: plugin.Config{
			Dir:                v.GetString("plugins.dir"),
			AllowCodeExecution: v.GetBool("plugins.allow_code_execution"),
			CommandAllowlist:   stringList(v, "plugins.command_allowlist", isComma),
			Timeout:            v.GetDuration("plugins.timeout"),
			MaxOutputBytes:     v.GetInt("plugins.max_output_bytes"),
			MaxMemoryBytes:     v.GetInt64("plugins.max_memory_bytes"),
			MaxWorkspaceBytes:  v.GetInt64("plugins.max_workspace_bytes"),
			MaxWorkspaceFiles:  v.GetInt("plugins.max_workspace_files"),
			AllowUnsandboxed:   v.GetBool("plugins.allow_unsandboxed"),
		},
	}
	if p := cfg.Plugins; p.Timeout <= 0 || p.MaxOutputBytes <= 0 || p.MaxMemoryBytes <= 0 || p.MaxWorkspaceBytes <= 0 || p.MaxWorkspaceFiles <= 0 {
		return nil, errors.New("plugins.timeout, plugins.max_output_bytes, plugins.max_memory_bytes, plugins.max_workspace_bytes and plugins.max_workspace_files must be positive")
	}
	if t := cfg.MetricsToken; t != "" && len(t) < 16 {
		return nil, errors.New("metrics.token must be at least 16 characters (or empty: /metrics open)")
	}
	if cfg.MCP.MaxSessions < 0 {
		return nil, errors.New("mcp.max_sessions must be 0 (half of http.max_org_requests, at most 1000) or a positive number of sessions")
	}
	keys, err := secretKeys(v)
	if err != nil {
		return nil, err
	}
	cfg.SecretsKeys = keys
	if cfg.Approvals.Required, err = requiredApprovals(v); err != nil {
		return nil, err
	}
	if until := v.GetString("auth.jwt_secret_previous_until"); until != "" {
		t, err := time.Parse(time.RFC3339, until)
		if err != nil {
			return nil, fmt.Errorf("auth.jwt_secret_previous_until must be a time such as 2026-01-31T12:00:00Z: %w", err)
		}
		cfg.Auth.PreviousSecretUntil = t
	}
	buckets, err := bucketConfigs(v)
	if err != nil {
		return nil, err
	}
	cfg.Buckets = buckets
	if cfg.BucketMaxOrgShare = v.GetFloat64("bucket_max_org_share"); cfg.BucketMaxOrgShare < 0 || cfg.BucketMaxOrgShare > 1 {
		return nil, fmt.Errorf("bucket_max_org_share must be between 0 and 1 (0: the default, %v), not %v", flow.DefaultMaxOrgShare, cfg.BucketMaxOrgShare)
	}
	retries, err := retryBySource(v)
	if err != nil {
		return nil, err
	}
	cfg.Outbox.RetryBySource = retries
	for key, d := range map[string]time.Duration{
		"approval.interactive_ttl": cfg.Outbox.InteractiveTTL, "approval.unattended_ttl": cfg.Outbox.UnattendedTTL,
		"sync_wait": cfg.Outbox.SyncWait, "worker.call_timeout": cfg.Worker.CallTimeout, "shutdown_timeout": cfg.ShutdownTimeout,
		"http.read_header_timeout": cfg.HTTP.ReadHeaderTimeout, "http.read_timeout": cfg.HTTP.ReadTimeout,
		"http.write_timeout": cfg.HTTP.WriteTimeout, "http.idle_timeout": cfg.HTTP.IdleTimeout,
		"mcp.session_timeout": cfg.MCP.SessionTimeout, "mcp.recheck_interval": cfg.MCP.Recheck,
		"auth.leeway": cfg.Auth.Leeway, "auth.revocation_refresh": cfg.Revocations.RefreshInterval, "auth.idp.refresh_interval": cfg.Auth.IdP.RefreshInterval,
		"auth.idp.unknown_kid_interval": cfg.Auth.IdP.UnknownKIDInterval, "auth.idp.timeout": cfg.Auth.IdP.Timeout,
		"webhooks.timeout": cfg.Webhooks.Timeout, "webhooks.retry_base_delay": cfg.Webhooks.RetryBaseDelay,
		"webhooks.retry_max_delay": cfg.Webhooks.RetryMaxDelay, "webhooks.disable_after": cfg.Webhooks.DisableAfter,
	} {
		if d <= 0 {
			return nil, fmt.Errorf("%s must be a positive duration such as 30s or 5m", key)
		}
	}
	// 0 is the worker's default for these; below it, a retry without
	// backoff, a sweep without pause, or a failed call's outcome dropped.
	w := cfg.Worker
	for key, d := range map[string]time.Duration{
		"worker.retry_base_delay": w.RetryBaseDelay, "worker.retry_max_delay": w.RetryMaxDelay,
		"worker.sweep_interval": w.SweepInterval, "worker.bookkeeping_retry": w.BookkeepingRetry,
		"worker.poll_interval": w.PollInterval,
	} {
		if d < 0 {
			return nil, fmt.Errorf("%s (%s) is %s: it must be a positive duration such as 30s or 5m", key, envOf(key), d)
		}
	}
	if w.MaxProviderWaits < 0 {
		return nil, fmt.Errorf("worker.max_provider_waits (%s) is %d: it must be a positive number of waits", envOf("worker.max_provider_waits"), w.MaxProviderWaits)
	}
	return cfg, nil
}

// newLogger builds the process logger on w from log.level and log.format.
// JSON logs write durations as strings such as "1.5s", as text logs do,
// rather than as nanoseconds. It warns of the OUTBOXD_* variables that set
// nothing (warnUnknownEnv).
func newLogger(v *viper.Viper, w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(v.GetString("log.level"))); err != nil {
		return nil, fmt.Errorf("log.level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	var logger *slog.Logger
	switch v.GetString("log.format") {
	case "text":
		logger = slog.New(slog.NewTextHandler(w, opts))
	case "json":
		opts.ReplaceAttr = func(_ []string, a slog.Attr) slog.Attr {
			if a.Value.Kind() == slog.KindDuration {
				a.Value = slog.StringValue(a.Value.Duration().String())
			}
			return a
		}
		logger = slog.New(slog.NewJSONHandler(w, opts))
	default:
		return nil, errors.New("log.format must be text or json")
	}
	warnUnknownEnv(logger, os.Environ())
	return logger, nil
}

// otherEnv are the OUTBOXD_* variables that are not configuration keys:
// the sections read whole (retry), those of outboxd's clients and
// plugins (`outboxd actions`, a plugin's sandbox), which may share the
// environment, and the tests'.
var otherEnv = map[string]bool{
	"OUTBOXD_RETRY": true, "OUTBOXD_URL": true, "OUTBOXD_TOKEN": true,
	"OUTBOXD_IDEMPOTENCY_KEY": true, "OUTBOXD_SANDBOX_SPEC": true,
	"OUTBOXD_TEST_LOG": true, "OUTBOXD_TEST_MAIN": true,
}

// warnUnknownEnv warns of each OUTBOXD_* variable of environ that sets no
// configuration key: a file's unknown key is refused, but a misspelt
// variable (OUTBOXD_RETENTION_INVOCATION=720h, OUTBOXD_SECRET_KEY) was
// ignored without a word, its setting left at the default. It names the
// variable, never its value.
func warnUnknownEnv(logger *slog.Logger, environ []string) {
	known := map[string]bool{}
	for key := range defaults {
		known[envOf(key)] = true
	}
	var unknown []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "OUTBOXD_") && !known[name] && !otherEnv[name] {
			unknown = append(unknown, name)
		}
	}
	slices.Sort(unknown)
	for _, name := range unknown {
		logger.Warn("an OUTBOXD_ variable sets no configuration key and is ignored: check its spelling (configs/outboxd.example.yaml lists the keys; a.b_c is OUTBOXD_A_B_C)",
			"variable", name)
	}
}

// retryBySource reads the optional per-source retry sections:
//
//	retry:
//	  slack: {max_attempts: 8, base_delay: 2s, max_delay: 10m}
func retryBySource(v *viper.Viper) (map[string]invocation.Retry, error) {
	if err := mapFromEnv(v, "retry", `{"slack": {"max_attempts": 3}}`); err != nil {
		return nil, err
	}
	out := map[string]invocation.Retry{}
	// The sections as read, from the file or OUTBOXD_RETRY's JSON alike
	// (viper's Sub sees the file's only).
	for source, raw := range v.GetStringMap("retry") {
		section, err := cast.ToStringMapE(raw)
		if err != nil {
			return nil, fmt.Errorf("retry.%s must be a section of max_attempts, base_delay, max_delay", source)
		}
		var r invocation.Retry
		for key, value := range section {
			switch key = strings.ToLower(key); key {
			case "max_attempts":
				if r.MaxAttempts, err = cast.ToIntE(value); err != nil {
					return nil, fmt.Errorf("retry.%s.%s is %q, not a whole number", source, key, fmt.Sprint(value))
				}
			case "base_delay", "max_delay":
				d, err := cast.ToDurationE(value)
				if err != nil || unitless(value) {
					return nil, fmt.Errorf("retry.%s.%s is %q, not a duration such as 500ms, 30s or 5m (a number needs its unit)", source, key, fmt.Sprint(value))
				}
				if key == "base_delay" {
					r.BaseDelay = d
				} else {
					r.MaxDelay = d
				}
			default:
				return nil, fmt.Errorf("retry.%s: unknown key %q (use max_attempts, base_delay, max_delay)", source, key)
			}
		}
		if r.MaxAttempts < 0 || r.BaseDelay < 0 || r.MaxDelay < 0 || (r.MaxDelay > 0 && r.MaxDelay < r.BaseDelay) {
			return nil, fmt.Errorf("retry.%s: attempts and delays must be positive, max_delay ≥ base_delay", source)
		}
		out[source] = r
	}
	return out, nil
}

// stringList reads a list key: the file's YAML list, or an OUTBOXD_*
// variable's entries, split where split says. Viper would split the
// variable at spaces, and a command of plugins.command_allowlist has
// them: "python3 -m checker" became three entries, "python3" alone then
// allowing every python3 command.
func stringList(v *viper.Viper, key string, split func(rune) bool) []string {
	s, ok := v.Get(key).(string)
	if !ok {
		return v.GetStringSlice(key)
	}
	var out []string
	for _, e := range strings.FieldsFunc(s, split) {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// isComma separates a variable's entries that may hold spaces (commands,
// audiences); isCommaOrSpace those that cannot (OAuth scopes).
func isComma(r rune) bool        { return r == ',' }
func isCommaOrSpace(r rune) bool { return r == ',' || unicode.IsSpace(r) }

// secretKeys reads secrets.keys: a list of {id, key} in a file, or
// "id:key,id:key" in OUTBOXD_SECRETS_KEYS (base64 has neither ':' nor
// ','). The keys themselves are checked by secretbox.NewRing.
func secretKeys(v *viper.Viper) ([]secretbox.Key, error) {
	if list, ok := v.Get("secrets.keys").(string); ok {
		var keys []secretbox.Key
		for _, entry := range strings.Split(list, ",") {
			if entry = strings.TrimSpace(entry); entry == "" {
				continue
			}
			id, key, ok := strings.Cut(entry, ":")
			if !ok {
				return nil, fmt.Errorf("secrets.keys: entry %d is not id:key (OUTBOXD_SECRETS_KEYS=id:key,id:key, the first sealing)", len(keys)+1)
			}
			keys = append(keys, secretbox.Key{ID: strings.TrimSpace(id), Secret: strings.TrimSpace(key)})
		}
		return keys, nil
	}
	var raw []map[string]any
	if err := v.UnmarshalKey("secrets.keys", &raw); err != nil {
		return nil, errors.New("secrets.keys must be a list of {id, key}, the first sealing")
	}
	keys := make([]secretbox.Key, len(raw))
	for i, entry := range raw {
		for field, value := range entry {
			switch value.(type) {
			case string, int:
			default:
				return nil, fmt.Errorf("secrets.keys[%d]: %s must be a string", i, field)
			}
			switch field {
			case "id":
				keys[i].ID = fmt.Sprint(value)
			case "key":
				keys[i].Secret = fmt.Sprint(value)
			default:
				return nil, fmt.Errorf("secrets.keys[%d]: unknown field %q (use id and key)", i, field)
			}
		}
	}
	return keys, nil
}

// bucketConfigs reads the buckets list, which adds to or redefines
// app.DefaultBuckets() by name.
func bucketConfigs(v *viper.Viper) ([]flow.BucketConfig, error) {
	var raw []struct {
		Name           string        `mapstructure:"name"`
		Rate           int           `mapstructure:"rate"`
		Interval       time.Duration `mapstructure:"interval"`
		Burst          int           `mapstructure:"burst"`
		MaxConcurrency int           `mapstructure:"max_concurrency"`
		Scope          string        `mapstructure:"scope"`
	}
	from := v
	if s, ok := v.Get("buckets").(string); ok {
		// OUTBOXD_BUCKETS: a JSON list, decoded as the file's is.
		var list []any
		if err := json.Unmarshal([]byte(s), &list); err != nil {
			return nil, errors.New(`buckets: OUTBOXD_BUCKETS must be a JSON list such as [{"name": "slack.minute", "rate": 50, "interval": "1m", "burst": 50}]`)
		}
		from = viper.New()
		from.Set("buckets", list)
	}
	// An interval of 60 would be 60ns: a bucket's rate a million times
	// what was meant.
	if list, ok := from.Get("buckets").([]any); ok {
		for i, b := range list {
			if m, ok := b.(map[string]any); ok && unitless(m["interval"]) {
				return nil, fmt.Errorf("buckets[%d].interval is %v, not a duration such as 1s or 1m (a number needs its unit)", i, m["interval"])
			}
		}
	}
	if err := from.UnmarshalKey("buckets", &raw); err != nil {
		return nil, fmt.Errorf("buckets: %w", err)
	}
	out := make([]flow.BucketConfig, len(raw))
	for i, b := range raw {
		out[i] = flow.BucketConfig{Name: b.Name, Rate: b.Rate, Interval: b.Interval, Burst: b.Burst, MaxConcurrency: b.MaxConcurrency, Scope: flow.Scope(b.Scope)}
	}
	return out, nil
}

// mapFromEnv refuses a map key's OUTBOXD_* variable unless it is a JSON
// object (like example): viper reads anything else as an empty map, which
// would drop the file's and the defaults' entries silently (approval.required's
// two approvals of R4).
func mapFromEnv(v *viper.Viper, key, example string) error {
	s, ok := v.Get(key).(string)
	if !ok || strings.TrimSpace(s) == "" {
		return nil
	}
	if _, err := cast.ToStringMapE(s); err != nil {
		return fmt.Errorf("%s: %s must be a JSON object such as %s", key, envOf(key), example)
	}
	return nil
}

// requiredApprovals reads approval.required: {"R4": 2, ...}, the distinct
// approvers each tier needs (a tier not named needs one).
func requiredApprovals(v *viper.Viper) (map[policy.Tier]int, error) {
	if err := mapFromEnv(v, "approval.required", `{"r2": 2, "r3": 2}`); err != nil {
		return nil, err
	}
	out := map[policy.Tier]int{}
	for key, raw := range v.GetStringMap("approval.required") {
		tier, ok := policy.ParseTier(key)
		n, err := cast.ToIntE(raw)
		if !ok || len(key) != 2 || err != nil || n < 1 || n > approvers.MaxRequired {
			return nil, fmt.Errorf("approval.required: %s: %v must be a tier R0 to R4 and a count of 1 to %d", key, raw, approvers.MaxRequired)
		}
		out[tier] = n
	}
	return out, nil
}
