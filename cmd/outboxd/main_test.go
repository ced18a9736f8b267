package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/viper"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app"
	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/platform/pglaunch/pglaunchtest"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
	"github.com/outboxd/outboxd/internal/platform/secretbox"
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
	output *apptest.Logs
}

func outboxd(t *testing.T, env []string, args ...string) *process {
	t.Helper()
	return start(t, exec.Command(os.Args[0], args...), env, args)
}

// start runs cmd, an outboxd with args, and kills it at cleanup.
func start(t *testing.T, cmd *exec.Cmd, env, args []string) *process {
	t.Helper()
	cmd.Env = append(append(os.Environ(), "OUTBOXD_TEST_MAIN=1"), env...)
	out := &apptest.Logs{}
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	p := &process{cmd: cmd, output: out}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		if t.Failed() {
			// A short tail: the failure is printed before these, and CI
			// shows the end of a test's output.
			logs := out.String()
			t.Logf("outboxd %s (last 3 KiB of its output):\n%s", strings.Join(args, " "), logs[max(0, len(logs)-3<<10):])
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
	env = append(env, "OUTBOXD_LOG_LEVEL=debug") // River's start-up lines are debug
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

	// Each role sizes its pool for what it runs.
	require.Contains(t, api.output.String(), fmt.Sprintf("max_conns=%d", app.PoolSize(app.RoleAPI, 200, runtime.GOMAXPROCS(0))))
	require.Contains(t, wrk.output.String(), fmt.Sprintf("max_conns=%d", app.PoolSize(app.RoleWorker, 200, runtime.GOMAXPROCS(0))))

	// The API process has no workers: its River client only inserts.
	require.NotContains(t, api.output.String(), "River client started")
	require.Contains(t, wrk.output.String(), "River client started")

	// The worker process serves metrics but not the API, nor the console.
	resp, err := http.Get("http://" + workerAddr + "/v1/invocations")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp, err = http.Get("http://" + workerAddr + "/console/")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	// The API process serves the web console from the binary.
	resp, err = http.Get("http://" + apiAddr + "/console")
	require.NoError(t, err)
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "/console redirects to /console/")
	require.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
	require.Contains(t, string(page), `<div id="app">`)

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
	require.Contains(t, out, "applied River's migrations")
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

func TestMigrate_DownRefusesStepsWithAll(t *testing.T) {
	t.Parallel()
	env := baseEnv(pgtest.URL(t), "http://127.0.0.1:1")
	code, out := run(t, env, "migrate", "down", "--steps", "2", "--all")
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "[all steps] were all set")
	require.NotContains(t, out, "reverted")

	code, out = run(t, env, "migrate", "status")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "up to date", "nothing was reverted")
}

func TestToken_MintsVerifiableTokens(t *testing.T) {
	t.Parallel()
	secret := "token-command-secret-0123456"
	code, out := run(t, []string{"OUTBOXD_AUTH_JWT_SECRET=" + secret}, "token", "--org", "o1", "--kind", "sandbox", "--session", "s1", "--sources", "slack,linear", "--ttl", "1h")
	require.Equal(t, 0, code, out)
	v, err := auth.NewVerifier(secret)
	require.NoError(t, err)
	token, hint, _ := strings.Cut(out, "\n")
	claims, err := v.Verify(token)
	require.NoError(t, err)
	// Each token has a jti of its own, and the command says how to revoke
	// it alone.
	require.Len(t, claims.ID, 26)
	require.Contains(t, hint, "outboxd tokens revoke --org o1 --jti "+claims.ID+" --expires-at ")
	require.Equal(t, "o1", claims.Org)
	require.Equal(t, auth.KindSandbox, claims.Kind)
	require.Equal(t, "s1", claims.SessionID)
	require.Equal(t, []string{"slack", "linear"}, claims.Sources.IDs())

	// --sources '' mints a present, empty claim (no source); no --sources
	// leaves the claim out (every source).
	code, out = run(t, []string{"OUTBOXD_AUTH_JWT_SECRET=" + secret}, "token", "--org", "o1", "--kind", "service", "--sources", "")
	require.Equal(t, 0, code, out)
	none, err := v.Verify(strings.TrimSpace(strings.SplitN(out, "\n", 2)[0]))
	require.NoError(t, err)
	require.True(t, none.Sources.Present())
	require.False(t, none.MaySource("slack"))
	code, out = run(t, []string{"OUTBOXD_AUTH_JWT_SECRET=" + secret}, "token", "--org", "o1", "--kind", "service")
	require.Equal(t, 0, code, out)
	every, err := v.Verify(strings.TrimSpace(strings.SplitN(out, "\n", 2)[0]))
	require.NoError(t, err)
	require.NotEqual(t, claims.ID, every.ID)
	require.False(t, every.Sources.Present())
	require.True(t, every.MaySource("slack"))
	require.WithinDuration(t, time.Now().Add(time.Hour), claims.ExpiresAt.Time, time.Minute)

	code, out = run(t, []string{"OUTBOXD_AUTH_JWT_SECRET=" + secret}, "token", "--org", "o1", "--kind", "user", "--role", "boss")
	require.NotEqual(t, 0, code)
	require.Contains(t, out, "invalid role")

	code, out = run(t, []string{"OUTBOXD_AUTH_JWT_SECRET=" + secret}, "token", "--org", "o1", "--kind", "sandbox")
	require.NotEqual(t, 0, code)
	require.Contains(t, out, "--kind sandbox needs --session")

	code, out = run(t, []string{"OUTBOXD_AUTH_JWT_SECRET=" + secret, "OUTBOXD_AUTH_MAX_LIFETIME=12h"}, "token", "--org", "o1", "--kind", "service")
	require.NotEqual(t, 0, code)
	require.Contains(t, out, "--ttl 24h0m0s is longer than auth.max_lifetime (12h0m0s)")

	code, out = run(t, nil, "token", "--help")
	require.Equal(t, 0, code, out)
	require.Regexp(t, `--data-dir string\s+the outboxd dev directory`, out, "no backquoted word taken for the flag's type")
}

func TestToken_SourcesTakeSpacesAfterCommas(t *testing.T) {
	t.Parallel()
	secret := "token-command-secret-0123456"
	v, err := auth.NewVerifier(secret)
	require.NoError(t, err)
	for sources, want := range map[string][]string{
		"slack, linear":  {"slack", "linear"},
		" slack ,github": {"slack", "github"},
		"slack,":         {"slack"},
	} {
		code, out := run(t, []string{"OUTBOXD_AUTH_JWT_SECRET=" + secret}, "token", "--org", "o1", "--kind", "service", "--sources", sources)
		require.Equal(t, 0, code, out)
		token, _, _ := strings.Cut(out, "\n")
		claims, err := v.Verify(token)
		require.NoError(t, err)
		require.Equal(t, want, claims.Sources.IDs(), "--sources %q", sources)
		require.True(t, claims.MaySource(want[0]), "--sources %q", sources)
	}
}

func TestToken_RefusesALifetimeThatIsNotPositive(t *testing.T) {
	t.Parallel()
	for _, ttl := range []string{"0", "-1h"} {
		code, out := run(t, []string{"OUTBOXD_AUTH_JWT_SECRET=token-command-secret-0123456"}, "token", "--org", "o1", "--kind", "service", "--ttl", ttl)
		require.Equal(t, 1, code, out)
		require.Contains(t, out, "lifetime must be positive")
		require.NotContains(t, out, "eyJ", "no token printed")
	}
}

func TestDev_RunsOnEmbeddedPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts its own Postgres cluster")
	}
	t.Parallel()
	// As root, t.TempDir's 0700 parent keeps the unprivileged server out,
	// so the cluster lives in /var/tmp: the case `dev clean` must cover.
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	stateDir := dir + "/state"
	// Nothing from the environment: dev must supply all of it, and the
	// other commands must find it.
	env := []string{"DATABASE_URL=", "OUTBOXD_DATABASE_URL=", "OUTBOXD_AUTH_JWT_SECRET=", "OUTBOXD_SECRETS_KEY="}
	t.Cleanup(func() {
		// After a failure, a killed dev's Postgres may take a moment to go.
		for range 30 {
			if code, _ := run(t, env, "dev", "clean", "--data-dir", stateDir); code == 0 {
				return
			}
			time.Sleep(500 * time.Millisecond)
		}
		t.Errorf("dev clean never succeeded for %s", stateDir)
	})
	addr := freeAddr(t)
	start := func() *process {
		p := outboxd(t, env, "dev", "--data-dir", stateDir, "--http-addr", addr)
		waitReady(t, addr, p)
		require.Eventually(t, func() bool { return strings.Contains(p.output.String(), "Ctrl-C stops") }, 10*time.Second, 50*time.Millisecond)
		return p
	}
	p := start()
	tokens := map[string]string{}
	for _, line := range strings.Split(p.output.String(), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && (k == "OWNER" || k == "SANDBOX") {
			tokens[k] = v
		}
	}
	welcome := p.output.String()
	require.Less(t, strings.Index(welcome, `"integration":"demo"`), strings.Index(welcome, "/v1/credentials/slack"),
		"the welcome starts with what works at once")

	t.Run("DemoProviderApproveToComplete", func(t *testing.T) {
		b := &apptest.Bundle{T: t, URL: "http://" + addr}
		r := b.Do("POST", "/v1/sessions/dev-session/actions/invoke", tokens["SANDBOX"], map[string]any{
			"integration": "demo", "action": "send_message", "params": map[string]string{"channel": "#general", "text": "hi from the test"},
		})
		require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
		id := r.Body["invocation_id"].(string)
		r = b.Do("POST", "/v1/invocations/"+id+"/approve", tokens["OWNER"], map[string]string{"mode": "once"})
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		require.Eventually(t, func() bool {
			r := b.Do("GET", "/v1/invocations/"+id, tokens["OWNER"], nil)
			inv, _ := r.Body["invocation"].(map[string]any)
			return inv["status"] == "completed"
		}, 20*time.Second, 50*time.Millisecond, p.output.String())
		require.Contains(t, p.output.String(), "demo provider: message delivered")

		// The demo credential is a generated secret, not a word that
		// scrubbing would take out of every answer.
		r = b.Do("POST", "/v1/sessions/dev-session/actions/invoke", tokens["SANDBOX"], map[string]any{
			"integration": "demo", "action": "echo", "params": map[string]string{"text": "this is a demo of outboxd"},
		})
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		require.Contains(t, string(r.Raw), "this is a demo of outboxd")
		require.NotContains(t, string(r.Raw), "[REDACTED]")
		state, err := readDevState(stateDir)
		require.NoError(t, err)
		require.Greater(t, len(state.DemoCredential), 40)
	})

	t.Run("OtherCommandsFindItsDatabase", func(t *testing.T) {
		code, out := run(t, env, "queue", "list", "--data-dir", stateDir)
		require.Equal(t, 0, code, out)
		require.Contains(t, out, "actions")
		code, out = run(t, env, "dlq", "list", "--org", devOrg, "--data-dir", stateDir)
		require.Equal(t, 0, code, out)
		require.Contains(t, out, "0 dead letter(s)")
		code, out = run(t, env, "migrate", "status", "--data-dir", stateDir)
		require.Equal(t, 0, code, out)
		require.Contains(t, out, "up to date")
		code, out = run(t, env, "token", "--org", devOrg, "--kind", "user", "--role", "owner", "--data-dir", stateDir)
		require.Equal(t, 0, code, out)
	})

	t.Run("ConsoleIsQuiet", func(t *testing.T) {
		require.NotRegexp(t, `level=INFO .*component=river`, p.output.String(), "River's INFO lines are debug")
	})

	running, err := os.ReadFile(stateDir + "/running.json")
	require.NoError(t, err)
	var rec devRunning
	require.NoError(t, json.Unmarshal(running, &rec))
	require.NotEmpty(t, rec.PostgresDataDir)

	t.Run("PostgresOnlyForItsOwner", func(t *testing.T) {
		require.Contains(t, welcome, "psql '"+rec.DatabaseURL+"'")
		require.Contains(t, rec.DatabaseURL, "?host=/", "a Unix socket")
		pglaunchtest.RequireOwnerOnly(t, rec.DatabaseURL, 0)
	})
	p.stop(t)

	code, out := run(t, env, "queue", "list", "--data-dir", stateDir)
	require.NotEqual(t, 0, code)
	require.Contains(t, out, "no `outboxd dev` is running", "running.json goes when dev stops")

	// Data and secrets survive a restart: the old owner token still works
	// and still sees the invocations.
	p = start()
	b := &apptest.Bundle{T: t, URL: "http://" + addr}
	r := b.Do("GET", "/v1/invocations", tokens["OWNER"], nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, float64(2), r.Body["total"])
	code, out = run(t, env, "dev", "clean", "--data-dir", stateDir)
	require.NotEqual(t, 0, code, "clean refuses while dev runs")
	require.Contains(t, out, "stop it first")
	p.stop(t)

	// The secrets go, the database stays: dev refuses to start on it.
	require.NoError(t, os.Remove(stateDir+"/dev.json"))
	code, out = run(t, env, "dev", "--data-dir", stateDir, "--http-addr", addr)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "sealed with another secrets.key")
	require.Contains(t, out, "outboxd dev clean")

	// dev clean removes the cluster wherever it lives.
	code, out = run(t, env, "dev", "clean", "--data-dir", stateDir)
	require.Equal(t, 0, code, out)
	require.NoDirExists(t, rec.PostgresDataDir)
	require.NoDirExists(t, stateDir)
	if !strings.HasPrefix(rec.PostgresDataDir, stateDir) {
		require.NoDirExists(t, filepath.Dir(rec.PostgresDataDir), "the fallback directory goes too")
	}
}

func TestServe_HasNoDemoProvider(t *testing.T) {
	t.Parallel()
	env := baseEnv(pgtest.URL(t), "http://127.0.0.1:1")
	addr := freeAddr(t)
	p := outboxd(t, env, "serve", "--http-addr", addr)
	waitReady(t, addr, p)
	b := &apptest.Bundle{T: t, URL: "http://" + addr, Secret: "separate-process-secret-0123"}
	r := b.Do("PUT", "/v1/credentials/demo", b.Owner(), map[string]string{"token": "demo"})
	require.Equal(t, http.StatusNotFound, r.Status, string(r.Raw))
	p.stop(t)
}

func TestServe_PortTakenNamesTheSetting(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	code, out := run(t, baseEnv(pgtest.URL(t), "http://127.0.0.1:1"), "serve", "--http-addr", ln.Addr().String())
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "OUTBOXD_HTTP_ADDR")
}

func TestServe_RefusesCredentialsSealedWithAnotherKey(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.URL(t)
	env := baseEnv(dbURL, "http://127.0.0.1:1")
	addr := freeAddr(t)
	p := outboxd(t, env, "serve", "--http-addr", addr)
	waitReady(t, addr, p)
	b := &apptest.Bundle{T: t, URL: "http://" + addr, Secret: "separate-process-secret-0123"}
	b.StoreSlackToken("xoxb-sealed")
	p.stop(t)

	code, out := run(t, baseEnv(dbURL, "http://127.0.0.1:1"), "serve", "--http-addr", addr)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "refusing to start: stored credentials were sealed with another secrets.key")
}

func TestLogger_JSONDurationsAreReadable(t *testing.T) {
	t.Parallel()
	v := viper.New()
	v.Set("log.level", "info")
	v.Set("log.format", "json")
	var buf bytes.Buffer
	logger, err := newLogger(v, &buf)
	require.NoError(t, err)
	logger.Info("shutting down", "timeout", 1500*time.Millisecond)
	require.Contains(t, buf.String(), `"timeout":"1.5s"`)
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

	// Operations need the database only: no auth.jwt_secret, no secrets.key.
	env := []string{"DATABASE_URL=" + b.DBURL, "OUTBOXD_AUTH_JWT_SECRET=", "OUTBOXD_SECRETS_KEY="}
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
	// Recorded in the organization's audit trail as the API records it,
	// by the operator.
	entry := operatorEntry(t, b, "dead_letter.retry")
	require.Equal(t, "oncall", entry["actor"].(map[string]any)["subject"])
	require.Equal(t, []any{id}, entry["after"].(map[string]any)["ids"])

	code, out = run(t, env, "dlq", "discard", "--org", apptest.Org, id)
	require.Equal(t, 1, code, out)
	require.Contains(t, out, "conflict")
	require.Contains(t, out, "1 of 1 could not be discarded")
	require.Empty(t, b.AuditEntries("action=dead_letter.discard"), "nothing discarded, nothing recorded")

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
			"outboxd_approval_latency_seconds", "outboxd_connector_drift_total", "outboxd_queue_age_seconds",
			"outboxd_connector_list_duration_seconds", "outboxd_event_stream_subscribers",
			"outboxd_webhook_deliveries_total", "outboxd_webhook_delivery_duration_seconds", "outboxd_slack_notifications_total",
			"outboxd_invocations_behind_total",
			"outboxd_mcp_calls_total", "outboxd_mcp_wait_seconds", "outboxd_mcp_sessions", "outboxd_mcp_list_changed_total",
			"outboxd_mcp_sessions_limited_total"}, name)
	}
}

func TestMakefile_TestExplainsMissingCgo(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	cmd := exec.Command("make", "-s", "-C", "../..", "check-cgo")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(out), "needs cgo and so a C compiler")
}

func TestBench_RunsEveryPhase(t *testing.T) {
	t.Parallel()
	// The bench makes its own scratch database on the test database's server.
	env := []string{"DATABASE_URL=" + pgtest.URL(t), "OUTBOXD_AUTH_JWT_SECRET=", "OUTBOXD_SECRETS_KEY="}
	code, out := run(t, env, "bench", "--n", "40", "--concurrency", "4", "--batch-size", "25",
		"--provider-latency", "20ms", "--offered-rate", "200", "--approvals", "3", "--backlog", "30", "--river-workers", "50", "--river-n", "0", "--stats-settle", "0")
	require.Equal(t, 0, code, out)
	for _, phase := range []string{"River raw (no-op jobs)", "River + provider call", "single ", "invoke (REST) ", "mcp tools/call ", "batch ", "single, provider 20ms", "single, 200/s offered", "approve → provider call",
		"backlog fill (30)", "single, 30 queued", "batch, 30 queued"} {
		require.Contains(t, out, phase)
	}
	require.Regexp(t, `single\s+40\s+\d+\s+\d+\s+0\.\d+\s+\S+\s+\S+\s+\d+\.\d\d\s+\d+ MB\s+\d+\n`, out,
		"CPU per action, without Postgres's on a server not embedded")
	// River's jobs with the provider call are compared with River raw (a
	// call that failed would have failed the whole run).
	require.Regexp(t, `River \+ provider call\s+40\s+—\s+\d+\s+\d\.\d+\s`, out)
	// The calls that waited for their results, stage by stage.
	require.Contains(t, out, "request→created     created→fetched     fetched→started   started→completed    completed→answer      request→answer")
	for _, phase := range []string{`invoke \(REST\)`, `mcp tools/call`} {
		require.Regexp(t, `(?m)^`+phase+`(\s+-?\d+\.\d / -?\d+\.\d / -?\d+\.\d){6}\n`, out)
	}
	// The MCP phase against single's rate and the REST invoke's p50.
	require.Regexp(t, `(?m)^mcp tools/call: \d+ % of single's actions/s, \d+ % of the REST invoke's; p50 [+-]\d+\.\d ms against the REST invoke's$`, out)
}

func TestBench_Skip(t *testing.T) {
	t.Parallel()
	env := []string{"DATABASE_URL=" + pgtest.URL(t), "OUTBOXD_AUTH_JWT_SECRET=", "OUTBOXD_SECRETS_KEY="}
	dir := t.TempDir()
	code, out := run(t, env, "bench", "--n", "10", "--skip", "single,invoke,mcp,batch,river-call", "--provider-latency", "0", "--offered-rate", "0",
		"--approvals", "0", "--river-workers", "10", "--river-n", "0", "--stats-settle", "0",
		"--cpuprofile", dir+"/cpu.prof", "--memprofile", dir+"/mem.prof")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "River raw (no-op jobs)")
	require.NotRegexp(t, `(?m)^(single|invoke \(REST\)|mcp tools/call|batch|River \+ provider call) `, out)
	for _, name := range []string{"cpu.prof", "mem.prof"} {
		raw, err := os.ReadFile(dir + "/" + name)
		require.NoError(t, err)
		require.Greater(t, len(raw), 2, name)
		require.Equal(t, []byte{0x1f, 0x8b}, raw[:2], "%s is a pprof profile (gzipped)", name)
	}

	code, out = run(t, env, "bench", "--skip", "offered")
	require.NotEqual(t, 0, code)
	require.Contains(t, out, `unknown phase "offered"`)

	// --profile-phase narrows the CPU profile to one phase; it needs the
	// profile and a phase the bench has.
	code, out = run(t, env, "bench", "--n", "10", "--concurrency", "2", "--skip", "single,invoke,batch,river-call", "--provider-latency", "0",
		"--offered-rate", "0", "--approvals", "0", "--river-workers", "10", "--river-n", "0", "--stats-settle", "0",
		"--cpuprofile", dir+"/mcp.prof", "--profile-phase", "mcp")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "mcp tools/call")
	raw, err := os.ReadFile(dir + "/mcp.prof")
	require.NoError(t, err)
	require.Equal(t, []byte{0x1f, 0x8b}, raw[:2], "mcp.prof is a pprof profile (gzipped)")
	code, out = run(t, env, "bench", "--profile-phase", "mcp")
	require.NotEqual(t, 0, code)
	require.Contains(t, out, "--profile-phase needs --cpuprofile")
	code, out = run(t, env, "bench", "--profile-phase", "river", "--cpuprofile", dir+"/x.prof")
	require.NotEqual(t, 0, code)
	require.Contains(t, out, `--profile-phase: unknown phase "river"`)
}

// operatorEntry is the one entry of action, made by the operator.
func operatorEntry(t *testing.T, b *apptest.Bundle, action string) map[string]any {
	t.Helper()
	entries := b.AuditEntries("action=" + action)
	require.Len(t, entries, 1)
	require.Equal(t, "operator", entries[0]["actor"].(map[string]any)["kind"])
	return entries[0]
}

// TestRoot_UnknownSubcommandFails: a command that only groups others
// refuses an unknown subcommand with an error (cobra would print the help
// and succeed), suggesting the near one; alone it prints its help.
func TestRoot_UnknownSubcommandFails(t *testing.T) {
	exec := func(args ...string) (string, error) {
		root := newRootCommand()
		var out strings.Builder
		root.SetArgs(args)
		root.SetOut(&out)
		root.SetErr(io.Discard)
		err := root.ExecuteContext(t.Context())
		return out.String(), err
	}
	for _, args := range [][]string{{"migrate", "upp"}, {"queue", "lst"}, {"secrets", "rotat"}, {"tokens", "bogus", "--org", "o"}, {"audit", "bogus"}} {
		_, err := exec(args...)
		require.Error(t, err, "%v", args)
		require.Contains(t, err.Error(), fmt.Sprintf("unknown command %q", args[1]))
	}
	_, err := exec("migrate", "upp")
	require.ErrorContains(t, err, "did you mean up?")
	out, err := exec("secrets")
	require.NoError(t, err)
	require.Contains(t, out, "Available Commands")
}
