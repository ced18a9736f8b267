package main

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/viper"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/flow"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/retention"
	"github.com/outboxd/outboxd/internal/platform/secretbox"
	"github.com/outboxd/outboxd/policy"
)

// TestConfig_EveryKeyReachesTheConfig changes each key in turn and checks
// that the configuration app runs with changes too, so no key of defaults
// (and of the example, which the loader holds to it) is read by nothing.
func TestConfig_EveryKeyReachesTheConfig(t *testing.T) {
	t.Parallel()

	// Read by the commands themselves, not part of app.Config.
	commandKeys := map[string]bool{"database.url": true, "database.max_conns": true, "log.level": true, "log.format": true}
	load := func(key string, value any) *viper.Viper {
		v := viper.New()
		for k, d := range defaults {
			v.SetDefault(k, d)
		}
		if key != "" {
			v.Set(key, value)
		}
		return v
	}
	base, err := appConfig(load("", nil))
	require.NoError(t, err)
	for key, def := range defaults {
		if commandKeys[key] {
			continue
		}
		var changed any
		switch d := def.(type) {
		case time.Duration:
			changed = d + time.Second
		case int:
			changed = d + 1
		case float64:
			changed = d + 0.5
		case bool:
			changed = !d
		case string:
			changed = d + "x"
			switch key {
			case "auth.jwt_secret_previous_until":
				changed = "2030-01-31T12:00:00Z"
			case "metrics.token":
				changed = "a-token-of-16-characters-or-more"
			}
		case []any:
			changed = []any{map[string]any{"name": "x", "rate": 1, "burst": 1}}
			switch key {
			case "plugins.command_allowlist", "auth.idp.audience", "console.oidc.scopes":
				changed = []any{"x"}
			case "secrets.keys":
				changed = []any{map[string]any{"id": "x", "key": "y"}}
			}
		case map[string]any: // approval.required
			changed = map[string]any{"r3": 3}
		default:
			t.Fatalf("%s: no change for a default of type %T", key, def)
		}
		cfg, err := appConfig(load(key, changed))
		require.NoError(t, err, key)
		require.False(t, reflect.DeepEqual(base, cfg), "%s is not read into app.Config", key)
	}
}

// TestConfig_DocumentedDefaults checks the tables of configuration keys in
// the README and docs/ against defaults: a row "| `key` | `value` | ... |"
// (or "| `a.b` / `c` | `1` / `2` | ... |" for a.b and a.c) must show the
// key's default, and "—" stands for an empty one.
func TestConfig_DocumentedDefaults(t *testing.T) {
	t.Parallel()

	files := []string{"../../README.md"}
	err := filepath.WalkDir("../../docs", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return err
	})
	require.NoError(t, err)

	found := 0
	for _, file := range files {
		f, err := os.Open(file)
		require.NoError(t, err)
		sc := bufio.NewScanner(f)
		for line := 1; sc.Scan(); line++ {
			cols := strings.Split(sc.Text(), "|")
			if len(cols) < 4 || !strings.HasPrefix(strings.TrimSpace(cols[1]), "`") {
				continue
			}
			keys := strings.Split(strings.TrimSpace(cols[1]), " / ")
			values := strings.Split(strings.TrimSpace(cols[2]), " / ")
			first := strings.Trim(keys[0], "`")
			prefix, _, _ := strings.Cut(first, ".")
			for i, k := range keys {
				key := strings.Trim(k, "`")
				if i > 0 && !strings.Contains(key, ".") {
					key = prefix + "." + key
				}
				def, ok := defaults[key]
				if !ok || i >= len(values) {
					continue
				}
				where := fmt.Sprintf("%s:%d: %s", file, line, key)
				doc, quoted := backticked(values[i])
				switch {
				case strings.TrimSpace(values[i]) == "—":
					require.Empty(t, fmt.Sprint(def), "%s is documented without a default, but has one", where)
				case !quoted:
					continue // "see the example"
				case reflect.TypeOf(def) == reflect.TypeOf(time.Duration(0)):
					d, err := time.ParseDuration(doc)
					require.NoError(t, err, where)
					require.Equal(t, def, d, "%s: the documented default is not the code's", where)
				default:
					require.Equal(t, fmt.Sprint(def), doc, "%s: the documented default is not the code's", where)
				}
				found++
			}
		}
		require.NoError(t, sc.Err())
		require.NoError(t, f.Close())
	}
	require.NotZero(t, found, "no table of configuration keys found in README.md or docs/ (rows \"| `key` | `default` | ... |\")")
}

// backticked returns the first `...` of s.
func backticked(s string) (string, bool) {
	_, rest, ok := strings.Cut(s, "`")
	if !ok {
		return "", false
	}
	v, _, ok := strings.Cut(rest, "`")
	return v, ok
}

// TestConfig_SecretsKeys reads secrets.keys from a file's list and from
// OUTBOXD_SECRETS_KEYS, keeps their order (the first seals), and refuses
// what is not a keyring with errors that never show a key.
func TestConfig_SecretsKeys(t *testing.T) {
	k1, k2 := secretbox.NewKey(), secretbox.NewKey()
	want := []secretbox.Key{{ID: "2026-11", Secret: k2}, {ID: "default", Secret: k1}}

	dir := t.TempDir()
	file := filepath.Join(dir, "outboxd.yaml")
	require.NoError(t, os.WriteFile(file, fmt.Appendf(nil, "secrets:\n  keys:\n    - {id: \"2026-11\", key: %q}\n    - id: default\n      key: %q\n", k2, k1), 0o600))
	cmd := newServeCommand()
	cmd.Flags().String("config", file, "")
	v, err := loadConfig(cmd)
	require.NoError(t, err)
	cfg, err := appConfig(v)
	require.NoError(t, err)
	require.Equal(t, want, cfg.SecretsKeys)
	box, err := cfg.Keyring()
	require.NoError(t, err)
	require.Equal(t, "2026-11", box.Primary())

	t.Setenv("OUTBOXD_SECRETS_KEYS", " 2026-11:"+k2+" , default:"+k1+",")
	v, err = loadConfig(newServeCommand())
	require.NoError(t, err)
	cfg, err = appConfig(v)
	require.NoError(t, err)
	require.Equal(t, want, cfg.SecretsKeys)

	t.Setenv("OUTBOXD_SECRETS_KEY", k1)
	v, err = loadConfig(newServeCommand())
	require.NoError(t, err)
	cfg, err = appConfig(v)
	require.NoError(t, err)
	_, err = cfg.Keyring()
	require.ErrorContains(t, err, "secrets.key and secrets.keys are both set")

	t.Setenv("OUTBOXD_SECRETS_KEY", "")
	for env, msg := range map[string]string{
		"a:" + k1 + ",a:" + k2: `id "a" is listed twice`,
		"a:" + k1 + ",b:" + k1: `secrets.keys "a" and "b" are the same key`,
		"a:not-base64!":        `secrets.keys "a" is not valid base64`,
		"a:" + base64.StdEncoding.EncodeToString(make([]byte, 31)): `secrets.keys "a" must decode to 32 bytes, got 31`,
		k1: "entry 1 is not id:key",
	} {
		t.Setenv("OUTBOXD_SECRETS_KEYS", env)
		v, err = loadConfig(newServeCommand())
		require.NoError(t, err)
		cfg, err := appConfig(v)
		if err == nil {
			_, err = cfg.Keyring()
		}
		require.ErrorContains(t, err, msg)
		require.NotContains(t, err.Error(), k1)
		require.NotContains(t, err.Error(), k2)
	}

	require.NoError(t, os.WriteFile(file, []byte("secrets:\n  keys:\n    - {id: a, secret: x}\n"), 0o600))
	cmd = newServeCommand()
	cmd.Flags().String("config", file, "")
	t.Setenv("OUTBOXD_SECRETS_KEYS", "")
	v, err = loadConfig(cmd)
	require.NoError(t, err)
	_, err = appConfig(v)
	require.ErrorContains(t, err, `secrets.keys[0]: unknown field "secret" (use id and key)`)
}

// TestConfig_WrongTypeIsRefused: a value that is not of its key's type, in
// the file or the environment, is refused with the key and what it must
// be, instead of read as the default (or, for a retention, as "forever").
func TestConfig_WrongTypeIsRefused(t *testing.T) {
	file := filepath.Join(t.TempDir(), "outboxd.yaml")
	require.NoError(t, os.WriteFile(file, []byte("worker:\n  poll_interval: 1 hour\n  max_workers: lots\nhttp:\n  trust_forwarded_for: maybe\n  unauthenticated_rate: fast\n"), 0o600))
	t.Setenv("OUTBOXD_RETENTION_INVOCATIONS", "30d")
	cmd := newServeCommand()
	cmd.Flags().String("config", file, "")
	_, err := loadConfig(cmd)
	require.EqualError(t, err, `configuration: `+
		`http.trust_forwarded_for (OUTBOXD_HTTP_TRUST_FORWARDED_FOR) is "maybe", not true or false; `+
		`http.unauthenticated_rate (OUTBOXD_HTTP_UNAUTHENTICATED_RATE) is "fast", not a number; `+
		`retention.invocations (OUTBOXD_RETENTION_INVOCATIONS) is "30d", not a duration such as 500ms, 30s, 5m or 720h (a number needs its unit); `+
		`worker.max_workers (OUTBOXD_WORKER_MAX_WORKERS) is "lots", not a whole number; `+
		`worker.poll_interval (OUTBOXD_WORKER_POLL_INTERVAL) is "1 hour", not a duration such as 500ms, 30s, 5m or 720h (a number needs its unit)`)

	// Values of the right type, as YAML and the environment spell them.
	require.NoError(t, os.WriteFile(file, []byte("worker:\n  poll_interval: 250ms\n  max_workers: 40\nhttp:\n  trust_forwarded_for: true\n  unauthenticated_rate: 2.5\n"), 0o600))
	t.Setenv("OUTBOXD_RETENTION_INVOCATIONS", "720h")
	t.Setenv("OUTBOXD_HTTP_MAX_CONNS", "500")
	v, err := loadConfig(cmd)
	require.NoError(t, err)
	cfg, err := appConfig(v)
	require.NoError(t, err)
	require.Equal(t, 250*time.Millisecond, cfg.Worker.PollInterval)
	require.Equal(t, 720*time.Hour, cfg.Retention.Invocations)
	require.Equal(t, 500, cfg.HTTP.MaxConns)

	// A source's retry section, whose keys are its own.
	for body, want := range map[string]string{
		"retry:\n  slack:\n    max_attempts: many\n": `retry.slack.max_attempts is "many", not a whole number`,
		"retry:\n  slack:\n    base_delay: 2 s\n":    `retry.slack.base_delay is "2 s", not a duration such as 500ms, 30s or 5m (a number needs its unit)`,
	} {
		require.NoError(t, os.WriteFile(file, []byte(body), 0o600))
		v, err := loadConfig(cmd)
		require.NoError(t, err)
		_, err = appConfig(v)
		require.EqualError(t, err, want)
	}
	require.NoError(t, os.WriteFile(file, []byte("retry:\n  linear:\n    max_attempts: 8\n    base_delay: 2s\n    max_delay: 10m\n"), 0o600))
	v, err = loadConfig(cmd)
	require.NoError(t, err)
	cfg, err = appConfig(v)
	require.NoError(t, err)
	require.Equal(t, map[string]invocation.Retry{"linear": {MaxAttempts: 8, BaseDelay: 2 * time.Second, MaxDelay: 10 * time.Minute}}, cfg.Outbox.RetryBySource)
}

// TestConfig_ListsFromTheEnvironment: a list in an OUTBOXD_* variable is
// comma-separated, so a command with spaces stays one command of the
// allowlist (split at spaces, "python3 -m checker" allowed every python3
// command); scopes, which have no spaces, may be split at either.
func TestConfig_ListsFromTheEnvironment(t *testing.T) {
	t.Setenv("OUTBOXD_PLUGINS_COMMAND_ALLOWLIST", "python3 -m checker, node check.js,")
	t.Setenv("OUTBOXD_AUTH_IDP_AUDIENCE", "api://outboxd,https://outboxd.example.com")
	t.Setenv("OUTBOXD_CONSOLE_OIDC_SCOPES", "openid profile,email")
	v, err := loadConfig(newServeCommand())
	require.NoError(t, err)
	cfg, err := appConfig(v)
	require.NoError(t, err)
	require.Equal(t, []string{"python3 -m checker", "node check.js"}, cfg.Plugins.CommandAllowlist)
	require.Equal(t, []string{"api://outboxd", "https://outboxd.example.com"}, cfg.Auth.IdP.Audience)
	require.Equal(t, []string{"openid", "profile", "email"}, cfg.Console.Scopes)

	// The file's lists as they are.
	file := filepath.Join(t.TempDir(), "outboxd.yaml")
	require.NoError(t, os.WriteFile(file, []byte("plugins:\n  command_allowlist: [\"python3 -m checker\", \"sh -c\"]\n"), 0o600))
	t.Setenv("OUTBOXD_PLUGINS_COMMAND_ALLOWLIST", "")
	cmd := newServeCommand()
	cmd.Flags().String("config", file, "")
	v, err = loadConfig(cmd)
	require.NoError(t, err)
	cfg, err = appConfig(v)
	require.NoError(t, err)
	require.Equal(t, []string{"python3 -m checker", "sh -c"}, cfg.Plugins.CommandAllowlist)
}

// TestConfig_MapsFromTheEnvironment: OUTBOXD_APPROVAL_REQUIRED and
// OUTBOXD_RETRY are JSON objects, OUTBOXD_BUCKETS a JSON list; anything
// else is refused (viper read a map as empty, which dropped even the
// default two approvals of R4).
func TestConfig_MapsFromTheEnvironment(t *testing.T) {
	t.Setenv("OUTBOXD_APPROVAL_REQUIRED", "r2:2")
	v, err := loadConfig(newServeCommand())
	require.NoError(t, err)
	_, err = appConfig(v)
	require.EqualError(t, err, `approval.required: OUTBOXD_APPROVAL_REQUIRED must be a JSON object such as {"r2": 2, "r3": 2}`)

	t.Setenv("OUTBOXD_APPROVAL_REQUIRED", `{"r2": 2, "R4": 3}`)
	v, err = loadConfig(newServeCommand())
	require.NoError(t, err)
	cfg, err := appConfig(v)
	require.NoError(t, err)
	require.Equal(t, map[policy.Tier]int{policy.TierR2: 2, policy.TierR4: 3}, cfg.Approvals.Required)

	// A source's retries, the other map, likewise.
	t.Setenv("OUTBOXD_RETRY", "slack:3")
	v, err = loadConfig(newServeCommand())
	require.NoError(t, err)
	_, err = appConfig(v)
	require.EqualError(t, err, `retry: OUTBOXD_RETRY must be a JSON object such as {"slack": {"max_attempts": 3}}`)
	t.Setenv("OUTBOXD_RETRY", `{"slack": {"max_attempts": 3, "base_delay": "2s"}}`)
	v, err = loadConfig(newServeCommand())
	require.NoError(t, err)
	cfg, err = appConfig(v)
	require.NoError(t, err)
	require.Equal(t, invocation.Retry{MaxAttempts: 3, BaseDelay: 2 * time.Second}, cfg.Outbox.RetryBySource["slack"])

	// The buckets, a list of maps: a JSON list.
	t.Setenv("OUTBOXD_BUCKETS", "slack.minute")
	v, err = loadConfig(newServeCommand())
	require.NoError(t, err)
	_, err = appConfig(v)
	require.ErrorContains(t, err, "OUTBOXD_BUCKETS must be a JSON list")
	t.Setenv("OUTBOXD_BUCKETS", `[{"name": "slack.minute", "rate": 5, "interval": "1m", "burst": 5}]`)
	v, err = loadConfig(newServeCommand())
	require.NoError(t, err)
	cfg, err = appConfig(v)
	require.NoError(t, err)
	require.Contains(t, cfg.Buckets, flow.BucketConfig{Name: "slack.minute", Rate: 5, Interval: time.Minute, Burst: 5})
}

// TestConfig_MCPMaxSessions: 0 (the default) leaves the session limit to
// be derived from http.max_org_requests at start; a negative one is
// refused, saying what 0 means.
func TestConfig_MCPMaxSessions(t *testing.T) {
	t.Parallel()
	load := func(sessions any) *viper.Viper {
		v := viper.New()
		for k, d := range defaults {
			v.SetDefault(k, d)
		}
		if sessions != nil {
			v.Set("mcp.max_sessions", sessions)
		}
		return v
	}
	cfg, err := appConfig(load(nil))
	require.NoError(t, err)
	require.Zero(t, cfg.MCP.MaxSessions)
	_, err = appConfig(load(-1))
	require.EqualError(t, err, "mcp.max_sessions must be 0 (half of http.max_org_requests, at most 1000) or a positive number of sessions")
	cfg, err = appConfig(load(20))
	require.NoError(t, err)
	require.Equal(t, 20, cfg.MCP.MaxSessions)
}

// TestConfig_NegativeRetentionIsRefused: a negative retention is refused
// with its key, where -1ns used to read as "kept forever"; 0 still keeps
// forever.
func TestConfig_NegativeRetentionIsRefused(t *testing.T) {
	t.Parallel()
	load := func(key string, value any) *viper.Viper {
		v := viper.New()
		for k, d := range defaults {
			v.SetDefault(k, d)
		}
		v.Set(key, value)
		return v
	}
	for _, key := range retentionKeys {
		for _, value := range []time.Duration{-1, -24 * time.Hour} {
			_, err := appConfig(load(key, value.String()))
			require.EqualError(t, err, key+" ("+envOf(key)+") is "+value.String()+": a retention must not be negative (0 keeps forever)")
		}
		_, err := appConfig(load(key, "0s"))
		require.NoError(t, err, key)
	}
	cfg, err := appConfig(load("retention.invocations", "0s"))
	require.NoError(t, err)
	require.Equal(t, retention.Forever, cfg.Retention.Invocations)
}

// TestConfig_WebhookDurationsMustBePositive: a negative webhooks.timeout
// (or backoff, or disable_after) started the daemon, and then every
// delivery failed at once; it is refused at start with its key.
func TestConfig_WebhookDurationsMustBePositive(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"webhooks.timeout", "webhooks.retry_base_delay", "webhooks.retry_max_delay", "webhooks.disable_after"} {
		v := viper.New()
		for k, d := range defaults {
			v.SetDefault(k, d)
		}
		v.Set(key, "-1s")
		_, err := appConfig(v)
		require.EqualError(t, err, key+" must be a positive duration such as 30s or 5m")
	}
}

// TestConfig_NumberWithoutUnitIsRefused: a duration written as a number
// was read as nanoseconds, so "retention.invocations: 30" (meant as days)
// kept finished invocations 30ns and the next retention run deleted every
// one; "shutdown_timeout: 30" gave running jobs 30ns. A number needs its
// unit (0 alone keeps meaning 0), in the file, the environment, a
// source's retry section and a bucket's interval. A whole-number key
// given 2.5 or 1e20 (read as 2, and as a negative number), and a number
// key given NaN, are refused too.
func TestConfig_NumberWithoutUnitIsRefused(t *testing.T) {
	file := filepath.Join(t.TempDir(), "outboxd.yaml")
	cmd := newServeCommand()
	cmd.Flags().String("config", file, "")
	load := func(body string) (*viper.Viper, error) {
		require.NoError(t, os.WriteFile(file, []byte(body), 0o600))
		return loadConfig(cmd)
	}
	_, err := load("retention:\n  invocations: 30\nshutdown_timeout: 1.5\nworker:\n  max_workers: 2.5\nhttp:\n  max_conns: 1e20\n")
	require.EqualError(t, err, `configuration: `+
		`http.max_conns (OUTBOXD_HTTP_MAX_CONNS) is "1e+20", not a whole number; `+
		`retention.invocations (OUTBOXD_RETENTION_INVOCATIONS) is "30", not a duration such as 500ms, 30s, 5m or 720h (a number needs its unit); `+
		`shutdown_timeout (OUTBOXD_SHUTDOWN_TIMEOUT) is "1.5", not a duration such as 500ms, 30s, 5m or 720h (a number needs its unit); `+
		`worker.max_workers (OUTBOXD_WORKER_MAX_WORKERS) is "2.5", not a whole number`)

	t.Setenv("OUTBOXD_RETENTION_AUDIT_ENTRIES", "400")
	t.Setenv("OUTBOXD_HTTP_UNAUTHENTICATED_RATE", "NaN")
	_, err = load("")
	require.EqualError(t, err, `configuration: `+
		`http.unauthenticated_rate (OUTBOXD_HTTP_UNAUTHENTICATED_RATE) is "NaN", not a number; `+
		`retention.audit_entries (OUTBOXD_RETENTION_AUDIT_ENTRIES) is "400", not a duration such as 500ms, 30s, 5m or 720h (a number needs its unit)`)

	// 0 needs no unit (a retention's "keep forever"), and units read as before.
	t.Setenv("OUTBOXD_RETENTION_AUDIT_ENTRIES", "0")
	t.Setenv("OUTBOXD_HTTP_UNAUTHENTICATED_RATE", "2.5")
	v, err := load("retention:\n  invocations: 720h\n  webhook_deliveries: 0\nworker:\n  max_workers: 40.0\n")
	require.NoError(t, err)
	cfg, err := appConfig(v)
	require.NoError(t, err)
	require.Equal(t, 720*time.Hour, cfg.Retention.Invocations)
	require.Equal(t, retention.Forever, cfg.Retention.WebhookDeliveries)
	require.Equal(t, retention.Forever, cfg.Retention.AuditEntries)
	require.Equal(t, 40, cfg.Worker.MaxWorkers)

	for body, want := range map[string]string{
		"retry:\n  slack:\n    max_delay: 600\n":                                  `retry.slack.max_delay is "600", not a duration such as 500ms, 30s or 5m (a number needs its unit)`,
		"buckets:\n  - {name: slack.minute, rate: 50, interval: 60, burst: 50}\n": `buckets[0].interval is 60, not a duration such as 1s or 1m (a number needs its unit)`,
	} {
		v, err := load(body)
		require.NoError(t, err)
		_, err = appConfig(v)
		require.EqualError(t, err, want)
	}
	t.Setenv("OUTBOXD_BUCKETS", `[{"name": "slack.minute", "rate": 50, "interval": 60, "burst": 50}]`)
	v, err = load("")
	require.NoError(t, err)
	_, err = appConfig(v)
	require.EqualError(t, err, `buckets[0].interval is 60, not a duration such as 1s or 1m (a number needs its unit)`)
}

// TestConfig_MisspeltVariableIsWarnedOf: a file's unknown key is refused,
// but a misspelt OUTBOXD_* variable was ignored without a word, its
// setting left at the default (a retention of 90 days for one meant to be
// 30); each process that logs now warns of it by name, never its value.
// The variables of keys, of whole sections and of outboxd's clients are
// not warned of.
func TestConfig_MisspeltVariableIsWarnedOf(t *testing.T) {
	t.Setenv("OUTBOXD_RETENTION_INVOCATION", "720h")
	t.Setenv("OUTBOXD_SECRET_KEY", "a-secret-value")
	t.Setenv("OUTBOXD_WORKER_MAX_WORKERS", "3")
	t.Setenv("OUTBOXD_PROVIDERS_SLACK_BASE_URL", "http://127.0.0.1:1")
	t.Setenv("OUTBOXD_RETRY", `{"slack": {"max_attempts": 3}}`)
	t.Setenv("OUTBOXD_URL", "http://127.0.0.1:1")
	v, err := loadConfig(newServeCommand())
	require.NoError(t, err)
	var out strings.Builder
	_, err = newLogger(v, &out)
	require.NoError(t, err)
	const warning = `level=WARN msg="an OUTBOXD_ variable sets no configuration key and is ignored: check its spelling (configs/outboxd.example.yaml lists the keys; a.b_c is OUTBOXD_A_B_C)" variable=`
	require.Contains(t, out.String(), warning+"OUTBOXD_RETENTION_INVOCATION\n")
	require.Contains(t, out.String(), warning+"OUTBOXD_SECRET_KEY\n")
	for _, name := range []string{"OUTBOXD_WORKER_MAX_WORKERS", "OUTBOXD_PROVIDERS_SLACK_BASE_URL", "OUTBOXD_RETRY", "OUTBOXD_URL"} {
		require.NotContains(t, out.String(), "variable="+name+"\n")
	}
	require.NotContains(t, out.String(), "a-secret-value")
}

// TestConfig_NegativeWorkerSettingsAreRefused: a negative
// worker.retry_base_delay (retries without backoff), sweep_interval,
// bookkeeping_retry or max_provider_waits started the daemon, and a
// negative poll_interval was refused in the words of another setting
// (flow.concurrency_retry); each is refused naming its key, and 0 is still
// the default.
func TestConfig_NegativeWorkerSettingsAreRefused(t *testing.T) {
	t.Parallel()
	load := func(key string, value any) *viper.Viper {
		v := viper.New()
		for k, d := range defaults {
			v.SetDefault(k, d)
		}
		v.Set(key, value)
		return v
	}
	for _, key := range []string{"worker.retry_base_delay", "worker.retry_max_delay", "worker.sweep_interval", "worker.bookkeeping_retry", "worker.poll_interval"} {
		_, err := appConfig(load(key, "-1s"))
		require.EqualError(t, err, key+" ("+envOf(key)+") is -1s: it must be a positive duration such as 30s or 5m")
		_, err = appConfig(load(key, "0s"))
		require.NoError(t, err, key)
	}
	_, err := appConfig(load("worker.max_provider_waits", -1))
	require.EqualError(t, err, "worker.max_provider_waits (OUTBOXD_WORKER_MAX_PROVIDER_WAITS) is -1: it must be a positive number of waits")
}

// TestConfig_OrganizationShares: the shares one organization may take of
// the API's pool, the workers and the webhook deliveries, and its number
// of webhook endpoints and of a global bucket's slots, how long it waits
// for its share of the pool and a statement may run, and its numbers of
// connectors and databases, are read from their keys (0 leaves each to
// its default).
func TestConfig_OrganizationShares(t *testing.T) {
	t.Setenv("OUTBOXD_DATABASE_MAX_ORG_CONNS", "5")
	t.Setenv("OUTBOXD_WORKER_MAX_ORG_WORKERS", "900")
	t.Setenv("OUTBOXD_WEBHOOKS_MAX_ORG_WORKERS", "7")
	t.Setenv("OUTBOXD_WEBHOOKS_MAX_ENDPOINTS", "12")
	t.Setenv("OUTBOXD_BUCKET_MAX_ORG_SHARE", "0.5")
	t.Setenv("OUTBOXD_DATABASE_ORG_CONN_WAIT", "3s")
	t.Setenv("OUTBOXD_DATABASE_STATEMENT_TIMEOUT", "45s")
	t.Setenv("OUTBOXD_CONNECTORS_MAX_PER_ORG", "9")
	t.Setenv("OUTBOXD_DATABASES_MAX_PER_ORG", "4")
	v, err := loadConfig(newServeCommand())
	require.NoError(t, err)
	cfg, err := appConfig(v)
	require.NoError(t, err)
	require.Equal(t, 5, cfg.MaxOrgConns)
	require.Equal(t, 900, cfg.Worker.MaxOrgWorkers)
	require.Equal(t, 7, cfg.Webhooks.MaxOrgWorkers)
	require.Equal(t, 12, cfg.Webhooks.MaxEndpoints)
	require.Equal(t, 0.5, cfg.BucketMaxOrgShare)
	require.Equal(t, 3*time.Second, cfg.OrgConnWait)
	require.Equal(t, 45*time.Second, cfg.StatementTimeout)
	require.Equal(t, 9, cfg.MaxConnectors)
	require.Equal(t, 4, cfg.MaxDatabases)
	for _, share := range []string{"-0.1", "1.5"} {
		t.Setenv("OUTBOXD_BUCKET_MAX_ORG_SHARE", share)
		v, err := loadConfig(newServeCommand())
		require.NoError(t, err)
		_, err = appConfig(v)
		require.ErrorContains(t, err, "bucket_max_org_share must be between 0 and 1", share)
	}
}
