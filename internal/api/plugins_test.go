package api_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors/plugin"
	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/outbox"
)

// pluginPackages writes the test's plugin packages into a fresh plugins
// directory; their scripts keep their traces in state.
func pluginPackages(t *testing.T, state string) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, manifest map[string]any, files map[string]string) {
		pdir := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(pdir, 0o755))
		manifest["name"] = name
		raw, err := json.Marshal(manifest)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(pdir, "action.json"), raw, 0o644))
		for file, body := range files {
			require.NoError(t, os.WriteFile(filepath.Join(pdir, file), []byte("#!/bin/sh\n"+body+"\n"), 0o755))
		}
	}
	// record is a write (R2): it "creates" a record, which verify checks
	// and rollback removes. Params with "break": true make verify fail.
	write("record", map[string]any{
		"description": "Create a record.",
		"riskTier":    "R2",
		"inputSchema": map[string]any{
			"type": "object", "required": []string{"title"}, "additionalProperties": false,
			"properties": map[string]any{"title": map[string]any{"type": "string"}, "break": map[string]any{"type": "boolean"}},
		},
		"outputSchema": map[string]any{"type": "object", "required": []string{"id"}},
		"verification": map[string]any{"required": true, "commands": []string{"test -f record.txt"}},
	}, map[string]string{
		"execute": `cat > record.txt
echo x >> ` + state + `/executes-$OUTBOXD_IDEMPOTENCY_KEY
printf '{"id": "rec-1", "key": "%s"}' "$OUTBOXD_IDEMPOTENCY_KEY"`,
		"verify": `if grep -q '"break":true'; then echo '{"ok": false, "checks": [{"name": "record readable", "ok": false}]}'; else echo '{"ok": true}'; fi`,
		"rollback": `rm record.txt
echo x >> ` + state + `/rollbacks-$OUTBOXD_IDEMPOTENCY_KEY`,
	})
	// hang (R1) outlives its timeout and leaves a background process.
	write("hang", map[string]any{"riskTier": "R1"}, map[string]string{
		"execute": "sleep 60 & echo $! >> " + state + "/grandchildren\nsleep 60",
	})
	// flaky (R1) fails transiently once per invocation, then succeeds.
	write("flaky", map[string]any{"riskTier": "R1"}, map[string]string{
		"execute": `f=` + state + `/flaky-$OUTBOXD_IDEMPOTENCY_KEY
echo x >> $f
if [ "$(wc -l < $f)" -lt 2 ]; then exit 75; fi
printf '{"attempts": %d}' "$(wc -l < $f)"`,
	})
	// wipe is destructive (R3).
	write("wipe", map[string]any{"riskTier": "R3"}, map[string]string{
		"execute": "touch " + state + "/wiped; echo '{}'",
	})
	return dir
}

func invokePlugin(b *apptest.Bundle, action string, params any) *apptest.Response {
	b.T.Helper()
	return b.Do("POST", "/v1/sessions/"+apptest.Session+"/actions/invoke", b.Sandbox(), map[string]any{
		"integration": plugin.SourceID, "action": action, "params": params,
	})
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	require.NoError(t, err)
	return strings.Count(string(b), "\n")
}

// TestPlugins_EndToEnd runs plugin packages through the API and the
// workers: the catalog, param validation, approval of a write, execute
// and verify, a failed verification rolled back, a retry with the same
// idempotency key, a timeout that kills the process group, and R3 that
// never runs unattended.
func TestPlugins_EndToEnd(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	b := apptest.Start(t, &apptest.Options{
		Plugins: plugin.Config{
			Dir: pluginPackages(t, state), AllowCodeExecution: true,
			CommandAllowlist: []string{"test -f"}, Timeout: 500 * time.Millisecond,
			// The scripts keep their traces in state, outside any
			// workspace: they run as plugins.allow_unsandboxed runs them.
			// The sandbox's own tests are in executors/plugin.
			AllowUnsandboxed: true, Sandbox: func() error { return errors.New("this test watches the plugins from outside") },
		},
		Outbox: outbox.Config{RetryBySource: map[string]invocation.Retry{plugin.SourceID: {MaxAttempts: 2}}},
	})

	t.Run("Catalog", func(t *testing.T) {
		// Listed without any credential, each with its tier.
		r := b.Do("GET", "/v1/sessions/"+apptest.Session+"/actions/available", b.Sandbox(), nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		tiers := map[string]any{}
		for _, a := range r.Body["actions"].([]any) {
			a := a.(map[string]any)
			if a["source"] == plugin.SourceID {
				tiers[a["action"].(string)] = a["risk_tier"]
				require.NotContains(t, a, "disabled")
			}
		}
		require.Equal(t, map[string]any{"record": "R2", "hang": "R1", "flaky": "R1", "wipe": "R3"}, tiers)
	})

	t.Run("InputSchemaValidatesParams", func(t *testing.T) {
		r := invokePlugin(b, "record", map[string]any{"titel": "typo"})
		e := requireAPIError(t, r, http.StatusBadRequest, "invalid_request")
		require.Contains(t, string(r.Raw), "title")
		require.NotNil(t, e["details"])
	})

	t.Run("ExecuteAndVerify", func(t *testing.T) {
		r := invokePlugin(b, "record", map[string]any{"title": "hello"})
		require.Equal(t, http.StatusAccepted, r.Status, "an R2 write waits for approval: %s", r.Raw)
		id := r.Body["invocation_id"].(string)
		require.Equal(t, "plugin", b.Invocation(id)["rate_bucket"])
		a := b.Do("POST", "/v1/invocations/"+id+"/approve", b.Owner(), map[string]string{"mode": "once"})
		require.Equal(t, http.StatusOK, a.Status, string(a.Raw))
		inv := b.WaitStatus(id, invocation.StatusCompleted, 15*time.Second)
		require.JSONEq(t, `{"id": "rec-1", "key": "`+id+`"}`, string(mustJSON(t, inv["result"])), "the idempotency key is the invocation id")

		env := resultEnvelope(t, b, "/v1/invocations/"+id+"/result-envelope", b.Owner())
		require.Equal(t, "succeeded", env["status"])
		require.Equal(t, "plugin.record", env["actionType"])
		require.Equal(t, "R2", env["riskTier"])
		require.Equal(t, map[string]any{"ok": true, "checks": []any{
			map[string]any{"name": "outputSchema", "ok": true},
			map[string]any{"name": "verify", "ok": true},
			map[string]any{"name": "test -f record.txt", "ok": true},
		}}, env["verification"])
		require.Equal(t, map[string]any{"attempted": false, "ok": false}, env["rollback"])
		require.Equal(t, 1, countLines(t, filepath.Join(state, "executes-"+id)))
	})

	t.Run("FailedVerificationIsRolledBack", func(t *testing.T) {
		r := invokePlugin(b, "record", map[string]any{"title": "hello", "break": true})
		require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
		id := r.Body["invocation_id"].(string)
		a := b.Do("POST", "/v1/invocations/"+id+"/approve", b.Owner(), map[string]string{"mode": "once"})
		require.Equal(t, http.StatusOK, a.Status, string(a.Raw))
		inv := b.WaitStatus(id, invocation.StatusFailed, 15*time.Second)
		require.Contains(t, inv["error"], "verification_failed")
		require.Contains(t, inv["error"], "rolled back")

		env := resultEnvelope(t, b, "/v1/invocations/"+id+"/result-envelope", b.Owner())
		require.Equal(t, "reverted", env["status"])
		require.Equal(t, map[string]any{"attempted": true, "ok": true}, env["rollback"])
		require.Equal(t, map[string]any{"attempted": false, "ok": false}, env["repair"])
		v := env["verification"].(map[string]any)
		require.Equal(t, false, v["ok"])
		require.Contains(t, mustJSONString(t, v["checks"]), `"name":"record readable","ok":false`)
		// Once each, despite two attempts allowed: no second repair.
		require.Equal(t, 1, countLines(t, filepath.Join(state, "executes-"+id)))
		require.Equal(t, 1, countLines(t, filepath.Join(state, "rollbacks-"+id)))
		require.Equal(t, float64(1), b.Invocation(id)["attempt"])
	})

	t.Run("RetriedWithTheSameKey", func(t *testing.T) {
		r := invokePlugin(b, "flaky", map[string]any{})
		id := r.Body["invocation"].(map[string]any)["id"].(string)
		inv := b.WaitStatus(id, invocation.StatusCompleted, 15*time.Second)
		require.JSONEq(t, `{"attempts": 2}`, string(mustJSON(t, inv["result"])))
		require.Equal(t, 2, countLines(t, filepath.Join(state, "flaky-"+id)), "both attempts saw the same OUTBOXD_IDEMPOTENCY_KEY")
	})

	t.Run("TimeoutKillsTheProcessGroup", func(t *testing.T) {
		r := invokePlugin(b, "hang", map[string]any{})
		id := r.Body["invocation"].(map[string]any)["id"].(string)
		inv := b.WaitStatus(id, invocation.StatusFailed, 20*time.Second)
		require.Contains(t, inv["error"], "plugin_timeout")
		raw, err := os.ReadFile(filepath.Join(state, "grandchildren"))
		require.NoError(t, err)
		pids := strings.Fields(string(raw))
		require.Len(t, pids, 2, "one per attempt")
		for _, p := range pids {
			pid, err := strconv.Atoi(p)
			require.NoError(t, err)
			requireProcessGone(t, pid)
		}
		env := resultEnvelope(t, b, "/v1/invocations/"+id+"/result-envelope", b.Owner())
		require.Equal(t, "failed", env["status"])
	})

	t.Run("R3NeverRunsUnattended", func(t *testing.T) {
		b.SetModes(map[string]string{"plugin:wipe": "allow"})
		r := invokePlugin(b, "wipe", map[string]any{})
		require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
		require.Equal(t, "pending", r.Body["status"])
		require.Equal(t, "risk_tier", r.Body["invocation"].(map[string]any)["mode_source"])

		b.SetModes(map[string]string{"plugin:wipe": "deny"})
		r = invokePlugin(b, "wipe", map[string]any{})
		requireAPIError(t, r, http.StatusForbidden, "action_denied")
		require.NoFileExists(t, filepath.Join(state, "wiped"))
	})
}

// TestPlugins_DisabledWithoutCodeExecution: with code execution off the
// catalog lists plugins as disabled and an invoke is a 403 that records
// nothing and runs nothing.
func TestPlugins_DisabledWithoutCodeExecution(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	b := apptest.Start(t, &apptest.Options{Plugins: plugin.Config{Dir: pluginPackages(t, state), CommandAllowlist: []string{"test -f"}}})

	r := b.Do("GET", "/v1/sessions/"+apptest.Session+"/actions/available", b.Sandbox(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	listed := 0
	for _, a := range r.Body["actions"].([]any) {
		a := a.(map[string]any)
		if a["source"] == plugin.SourceID {
			listed++
			require.Equal(t, true, a["disabled"], a["action"])
		}
	}
	require.Equal(t, 4, listed)
	require.Contains(t, r.Body["sources"], map[string]any{
		"source": "plugin", "name": "Plugins", "status": "disabled", "error": plugin.DisabledReason,
	})

	b.SetModes(map[string]string{"plugin:wipe": "allow"})
	for _, action := range []string{"flaky", "wipe"} {
		e := requireAPIError(t, invokePlugin(b, action, map[string]any{}), http.StatusForbidden, "source_disabled")
		require.Contains(t, e["message"], "plugins.allow_code_execution")
	}
	e := b.Do("POST", "/v1/envelopes", b.Service(), map[string]any{
		"external_id": "plugin-1", "tool": map[string]any{"source": "plugin", "action": "flaky"}, "args": map[string]any{},
	})
	requireAPIError(t, e, http.StatusForbidden, "source_disabled")

	list := b.Do("GET", "/v1/invocations", b.Owner(), nil)
	require.Equal(t, http.StatusOK, list.Status, string(list.Raw))
	require.Equal(t, float64(0), list.Body["total"], "a refused invoke records nothing")
	require.NoFileExists(t, filepath.Join(state, "wiped"))
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

func mustJSONString(t *testing.T, v any) string { return string(mustJSON(t, v)) }

// requireProcessGone waits briefly for pid to be gone (or a zombie).
func requireProcessGone(t *testing.T, pid int) {
	t.Helper()
	require.Eventually(t, func() bool {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if os.IsNotExist(err) {
			return true
		}
		if err != nil {
			return false
		}
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		return len(fields) > 0 && fields[0] == "Z"
	}, 3*time.Second, 20*time.Millisecond, "process %d is still running", pid)
}

// TestPlugins_TextPostgresRefusesIsStoredOnce: what a plugin says (its
// error's code and message, its verify's checks) may hold a NUL or bytes
// that are not UTF-8, which Postgres refuses in text: the outcome could
// not be recorded, so every attempt ran the plugin again and the
// invocation then failed as attempts_exhausted, saying nothing of what
// happened. It is stored with U+FFFD in their place, once.
func TestPlugins_TextPostgresRefusesIsStoredOnce(t *testing.T) {
	t.Parallel()
	state, dir := t.TempDir(), t.TempDir()
	for name, files := range map[string]map[string]string{
		"garbled_error": {"execute": `printf '{"error": {"code": "bad\\u0000code\377", "message": "bad\\u0000message\377"}}'
exit 1`},
		"garbled_check": {"execute": `echo '{}'`, "verify": `printf '{"ok": false, "checks": [{"name": "n\\u0000ame\377", "ok": false, "detail": "d\\u0000etail\377"}]}'`},
		"garbled_pass":  {"execute": `echo '{}'`, "verify": `printf '{"ok": true, "checks": [{"name": "n\\u0000ame\377", "ok": true}]}'`},
	} {
		pdir := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(pdir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(pdir, "action.json"), mustJSON(t, map[string]any{"name": name, "riskTier": "R1"}), 0o644))
		for file, body := range files {
			if file == "execute" {
				body = "echo x >> " + state + "/runs-$OUTBOXD_IDEMPOTENCY_KEY\n" + body
			}
			require.NoError(t, os.WriteFile(filepath.Join(pdir, file), []byte("#!/bin/sh\ncat >/dev/null\n"+body+"\n"), 0o755))
		}
	}
	b := apptest.Start(t, &apptest.Options{
		Plugins: plugin.Config{
			Dir: dir, AllowCodeExecution: true,
			// The scripts count their runs in state, outside any workspace.
			AllowUnsandboxed: true, Sandbox: func() error { return errors.New("this test watches the plugins from outside") },
		},
		Outbox: outbox.Config{RetryBySource: map[string]invocation.Retry{plugin.SourceID: {MaxAttempts: 2}}},
	})

	for action, want := range map[string]struct {
		status invocation.Status
		error  string
	}{
		"garbled_error": {invocation.StatusFailed, "bad\uFFFDcode\uFFFD: bad\uFFFDmessage\uFFFD"},
		"garbled_check": {invocation.StatusFailed, "verification_failed: verification failed: verify verify answered ok: false; n\uFFFDame\uFFFD d\uFFFDetail\uFFFD"},
		"garbled_pass":  {invocation.StatusCompleted, ""},
	} {
		r := invokePlugin(b, action, map[string]any{})
		require.Contains(t, r.Body, "invocation", string(r.Raw))
		id := r.Body["invocation"].(map[string]any)["id"].(string)
		inv := b.WaitStatus(id, want.status, 20*time.Second)
		if want.error != "" {
			require.Equal(t, want.error, inv["error"], action)
		}
		require.Equal(t, 1, countLines(t, filepath.Join(state, "runs-"+id)), "%s ran once", action)
	}
}
