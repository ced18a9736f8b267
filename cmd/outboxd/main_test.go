package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/viper"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/apptest"
	"github.com/outboxd/outboxd/internal/auth"
	"github.com/outboxd/outboxd/internal/invocation"
	"github.com/outboxd/outboxd/internal/pgtest"
	"github.com/outboxd/outboxd/internal/secretbox"
	"github.com/outboxd/outboxd/worker"
)

// TestMain doubles as the outboxd binary: with OUTBOXD_TEST_MAIN set, the
// test executable runs main() with the given arguments, so tests start real
// outboxd processes without a separate build.
func TestMain(m *testing.M) {
	if os.Getenv("OUTBOXD_TEST_MAIN") != "" {
		os.Args = append([]string{"outboxd"}, os.Args[1:]...)
		main()
		os.Exit(0)
	}
	os.Exit(pgtest.Main(m))
}

// process is an outboxd started as its own OS process.
type process struct {
	cmd    *exec.Cmd
	output *syncBuffer
}

// syncBuffer is a bytes.Buffer the process writes while the test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func outboxd(t *testing.T, env []string, args ...string) *process {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), "OUTBOXD_TEST_MAIN=1"), env...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	p := &process{cmd: cmd, output: out}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return p
}

// run runs outboxd to completion and returns its exit code and output.
func run(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	p := outboxd(t, env, args...)
	err := p.cmd.Wait()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			require.NoError(t, err)
		}
	}
	return p.cmd.ProcessState.ExitCode(), p.output.String()
}

// stop sends SIGTERM and requires a clean exit.
func (p *process) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, p.output.String())
		require.Equal(t, 0, p.cmd.ProcessState.ExitCode())
	case <-time.After(30 * time.Second):
		t.Fatalf("outboxd did not stop: %s", p.output.String())
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

func waitReady(t *testing.T, addr string, p *process) {
	t.Helper()
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 50*time.Millisecond, "outboxd at %s never became ready: %s", addr, p.output)
}

func baseEnv(dbURL, slackURL string) []string {
	return []string{
		"DATABASE_URL=" + dbURL,
		"OUTBOXD_AUTH_JWT_SECRET=separate-process-secret-0123",
		"OUTBOXD_SECRETS_KEY=" + secretbox.NewKey(),
		"OUTBOXD_PROVIDERS_SLACK_BASE_URL=" + slackURL,
		"OUTBOXD_WORKER_RETRY_BASE_DELAY=100ms",
	}
}

func TestServe_APIAndWorkerInSeparateProcesses(t *testing.T) {
	t.Parallel()
	slack := apptest.NewSlack(t, nil)
	env := baseEnv(pgtest.URL(t), slack.Server.URL)

	apiAddr, workerAddr := freeAddr(t), freeAddr(t)
	api := outboxd(t, env, "serve", "--role=api", "--http-addr", apiAddr)
	wrk := outboxd(t, env, "serve", "--role=worker", "--http-addr", workerAddr)
	waitReady(t, apiAddr, api)
	waitReady(t, workerAddr, wrk)

	b := &apptest.Bundle{T: t, URL: "http://" + apiAddr, Secret: "separate-process-secret-0123"}
	b.StoreSlackToken("xoxb-separate")
	b.SetModes(map[string]string{"slack:send_message": "allow"})
	r := b.Invoke("send_message", map[string]any{"channel": "C1", "text": "from another process"})
	require.Equal(t, http.StatusOK, r.Status, "%s\napi: %s\nworker: %s", r.Raw, api.output, wrk.output)
	require.Equal(t, "completed", r.Body["invocation"].(map[string]any)["status"])
	require.Len(t, slack.Requests(), 1)

	// The API process has no workers: its River client only inserts.
	require.NotContains(t, api.output.String(), "River client started")

	// The worker process serves metrics but not the API.
	resp, err := http.Get("http://" + workerAddr + "/v1/invocations")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	api.stop(t)
	wrk.stop(t)
}

func TestServe_UnmigratedDatabaseExitsWithAdvice(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.URL(t)
	env := baseEnv(dbURL, "http://127.0.0.1:1")

	code, out := run(t, env, "migrate", "down", "--all")
	require.Equal(t, 0, code, out)

	code, out = run(t, env, "serve", "--http-addr", freeAddr(t))
	require.Equal(t, 2, code, out)
	require.Contains(t, out, "outboxd migrate up")

	code, out = run(t, env, "migrate", "status")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "pending")

	code, out = run(t, env, "migrate", "up")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "applied 001")
	code, out = run(t, env, "migrate", "up")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "up to date")

	code, out = run(t, env, "migrate", "status")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "001_init\tapplied")
}

func TestMigrate_ConcurrentRunsTakeTurns(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.URL(t)
	env := baseEnv(dbURL, "http://127.0.0.1:1")
	code, out := run(t, env, "migrate", "down", "--all")
	require.Equal(t, 0, code, out)

	procs := []*process{outboxd(t, env, "migrate", "up"), outboxd(t, env, "migrate", "up"), outboxd(t, env, "migrate", "up")}
	applied := 0
	for _, p := range procs {
		require.NoError(t, p.cmd.Wait(), p.output.String())
		applied += strings.Count(p.output.String(), "applied 001")
	}
	require.Equal(t, 1, applied, "exactly one process applies the migration")
}

func TestToken_MintsVerifiableTokens(t *testing.T) {
	t.Parallel()
	secret := "token-command-secret-0123456"
	code, out := run(t, []string{"OUTBOXD_AUTH_JWT_SECRET=" + secret}, "token", "--org", "o1", "--kind", "sandbox", "--session", "s1", "--sources", "slack,linear", "--ttl", "1h")
	require.Equal(t, 0, code, out)
	v, err := auth.NewVerifier(secret)
	require.NoError(t, err)
	claims, err := v.Verify(strings.TrimSpace(out))
	require.NoError(t, err)
	require.Equal(t, "o1", claims.Org)
	require.Equal(t, auth.KindSandbox, claims.Kind)
	require.Equal(t, "s1", claims.SessionID)
	require.Equal(t, []string{"slack", "linear"}, claims.Sources)
	require.WithinDuration(t, time.Now().Add(time.Hour), claims.ExpiresAt.Time, time.Minute)

	code, out = run(t, []string{"OUTBOXD_AUTH_JWT_SECRET=" + secret}, "token", "--org", "o1", "--kind", "user", "--role", "boss")
	require.NotEqual(t, 0, code)
	require.Contains(t, out, "invalid role")
}

func TestDev_RunsOnEmbeddedPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts its own Postgres cluster")
	}
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	addr := freeAddr(t)
	env := []string{"DATABASE_URL=", "OUTBOXD_DATABASE_URL="}
	start := func() *process {
		p := outboxd(t, env, "dev", "--data-dir", dir+"/state", "--http-addr", addr)
		waitReady(t, addr, p)
		return p
	}
	p := start()
	require.Eventually(t, func() bool { return strings.Contains(p.output.String(), "SANDBOX=") }, 10*time.Second, 50*time.Millisecond)
	var tokens = map[string]string{}
	for _, line := range strings.Split(p.output.String(), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && (k == "OWNER" || k == "SANDBOX") {
			tokens[k] = v
		}
	}
	b := &apptest.Bundle{T: t, URL: "http://" + addr}
	r := b.Do("POST", "/v1/sessions/dev-session/actions/invoke", tokens["SANDBOX"], map[string]any{
		"integration": "slack", "action": "send_message", "params": map[string]string{"channel": "C1", "text": "hi"},
	})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	p.stop(t)

	// Data and secrets survive a restart: the old owner token still works
	// and still sees the invocation.
	p = start()
	r = b.Do("GET", "/v1/invocations", tokens["OWNER"], nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, float64(1), r.Body["total"])
	p.stop(t)
}

func TestConfig_ExampleDocumentsEveryKey(t *testing.T) {
	t.Parallel()
	cmd := newServeCommand()
	cmd.Flags().String("config", "", "")
	require.NoError(t, cmd.Flags().Set("config", "../../configs/outboxd.example.yaml"))
	v, err := loadConfig(cmd)
	require.NoError(t, err, "the example must load")
	for key, def := range defaults {
		require.True(t, v.InConfig(key), "configs/outboxd.example.yaml lacks %q", key)
		got := fmt.Sprint(v.Get(key))
		if _, ok := def.(time.Duration); ok {
			got = v.GetDuration(key).String()
		}
		require.Equal(t, fmt.Sprint(def), got, "example value of %q should be its default", key)
	}
}

func TestDLQ_CommandsReplayThroughTheCLI(t *testing.T) {
	t.Parallel()
	var healthy atomic.Bool
	b := apptest.Start(t, &apptest.Options{
		Worker: worker.Config{MaxAttempts: 1},
		SlackFunc: func(w http.ResponseWriter, r *http.Request) {
			if healthy.Load() {
				apptest.SlackOK(w, r)
				return
			}
			w.WriteHeader(http.StatusServiceUnavailable)
		},
	})
	b.StoreSlackToken("xoxb-cli")
	b.SetModes(map[string]string{"slack:send_message": "allow"})
	r := b.Invoke("send_message", map[string]any{"channel": "C1", "text": "to replay"})
	id := r.Body["invocation"].(map[string]any)["id"].(string)
	b.WaitStatus(id, invocation.StatusFailed, 10*time.Second)

	env := []string{
		"DATABASE_URL=" + b.DBURL,
		"OUTBOXD_AUTH_JWT_SECRET=" + b.Config.JWTSecret,
		"OUTBOXD_SECRETS_KEY=" + b.Config.SecretsKey,
	}
	code, out := run(t, env, "dlq", "list", "--org", apptest.Org)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, id)
	require.Contains(t, out, "1 dead letter(s)")

	healthy.Store(true)
	code, out = run(t, env, "dlq", "retry", "--org", apptest.Org, "--by", "oncall", id)
	require.Equal(t, 0, code, out)
	require.Contains(t, out, `"status":"retried"`)
	inv := b.WaitStatus(id, invocation.StatusCompleted, 10*time.Second)
	require.Equal(t, "oncall", inv["replayed_by"])

	code, out = run(t, env, "dlq", "discard", "--org", apptest.Org, id)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "conflict")

	code, out = run(t, env, "queue", "list")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "actions")
}

func TestConfigs_OperationsFilesParse(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../configs/grafana-dashboard.json")
	require.NoError(t, err)
	var dash struct {
		Panels []struct {
			Targets []struct{ Expr string } `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(raw, &dash))
	require.NotEmpty(t, dash.Panels)

	rules := viper.New()
	rules.SetConfigFile("../../configs/prometheus-alerts.yaml")
	require.NoError(t, rules.ReadInConfig())
	require.NotEmpty(t, rules.Get("groups"))

	// Every metric the dashboard and the alerts use is one outboxd exports.
	alerts, err := os.ReadFile("../../configs/prometheus-alerts.yaml")
	require.NoError(t, err)
	text := string(raw) + string(alerts)
	for _, name := range regexp.MustCompile(`outboxd_[a-z_]+`).FindAllString(text, -1) {
		name = strings.TrimSuffix(name, "_bucket")
		require.Contains(t, []string{"outboxd_invocations_total", "outboxd_queue_jobs", "outboxd_job_duration_seconds",
			"outboxd_approval_latency_seconds", "outboxd_connector_drift_total"}, name)
	}
}
