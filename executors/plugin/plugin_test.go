package plugin_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/plugin"
)

// core is what the tests reserve: two core sources and their actions.
var core = plugin.Reserved{
	"slack":  {"send_message"},
	"linear": {"create_issue", "list_issues"},
}

// pkg is a plugin package a test writes: its action.json and executables.
type pkg struct {
	manifest map[string]any
	files    map[string]string // name → content, written executable
}

// writePackages writes packages under a fresh plugins directory.
func writePackages(t *testing.T, pkgs map[string]pkg) string {
	t.Helper()
	dir := t.TempDir()
	for name, p := range pkgs {
		pdir := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(pdir, 0o755))
		m := p.manifest
		if m == nil {
			m = map[string]any{}
		}
		if _, ok := m["name"]; !ok {
			m["name"] = name
		}
		raw, err := json.Marshal(m)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(pdir, "action.json"), raw, 0o644))
		for file, content := range p.files {
			require.NoError(t, os.WriteFile(filepath.Join(pdir, file), []byte(content), 0o755))
		}
	}
	return dir
}

func load(t *testing.T, cfg plugin.Config, pkgs map[string]pkg) (*plugin.Source, error) {
	t.Helper()
	cfg.Dir = writePackages(t, pkgs)
	return plugin.Load(&cfg, core)
}

func mustLoad(t *testing.T, cfg plugin.Config, pkgs map[string]pkg) *plugin.Source {
	t.Helper()
	cfg.AllowCodeExecution = true
	s, err := load(t, cfg, pkgs)
	require.NoError(t, err)
	return s
}

// unsandboxed is cfg for a test that watches from outside what a plugin
// does (files it writes, pids it records): it runs the plugins without
// the sandbox, as plugins.allow_unsandboxed does where the kernel cannot
// enforce one. The sandbox has tests of its own (sandbox_test.go).
func unsandboxed(cfg plugin.Config) plugin.Config {
	cfg.AllowUnsandboxed = true
	cfg.Sandbox = func() error { return errors.New("this test watches the plugin from outside") }
	return cfg
}

func sh(body string) string { return "#!/bin/sh\n" + body + "\n" }

const okExecute = "cat >/dev/null; echo '{\"done\": true}'"

func execute(t *testing.T, s *plugin.Source, action, params string) (executors.Result, *executors.Error) {
	t.Helper()
	res, err := s.Execute(context.Background(), action, json.RawMessage(params), executors.ExecContext{IdempotencyKey: "key-123"})
	if err == nil {
		return res, nil
	}
	var e *executors.Error
	require.ErrorAs(t, err, &e)
	return res, e
}

// An action.json that is not a regular file, or is larger than a
// manifest can be, stops the start with an error naming it: a named pipe
// held the start forever (waiting for a writer), and a device such as
// /dev/zero (a link to it) or a huge file was read into memory whole.
func TestLoad_ActionJSONMustBeASmallRegularFile(t *testing.T) {
	t.Parallel()
	for name, create := range map[string]func(path string) error{
		"a named pipe": func(path string) error { return syscall.Mkfifo(path, 0o644) },
		"too large": func(path string) error {
			return os.WriteFile(path, []byte(`{"riskTier": "R1"`+strings.Repeat(" ", 2<<20)+`}`), 0o644)
		},
	} {
		cfg := plugin.Config{Dir: writePackages(t, map[string]pkg{"odd": {files: map[string]string{"execute": sh(okExecute)}}})}
		path := filepath.Join(cfg.Dir, "odd", "action.json")
		require.NoError(t, os.Remove(path))
		require.NoError(t, create(path), name)
		done := make(chan error, 1)
		go func() {
			_, err := plugin.Load(&cfg, core)
			done <- err
		}()
		select {
		case err := <-done:
			require.ErrorContains(t, err, "action.json", name)
			require.ErrorContains(t, err, "odd", name)
		case <-time.After(5 * time.Second):
			if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close() // let the load go
			}
			t.Fatalf("%s: the load did not end", name)
		}
	}
}

// Rule 1: a plugin cannot take a core action's name or another source's
// id; the error names both.
func TestLoad_RefusesOverridingACoreActionOrASource(t *testing.T) {
	t.Parallel()
	for name, want := range map[string][]string{
		"send_message": {`"send_message"`, "core action slack.send_message"},
		"list_issues":  {`"list_issues"`, "core action linear.list_issues"},
		"slack":        {`"slack"`, "source slack"},
		"plugin":       {`"plugin"`, "source plugin"},
	} {
		_, err := load(t, plugin.Config{}, map[string]pkg{name: {files: map[string]string{"execute": sh(okExecute)}}})
		require.Error(t, err, name)
		for _, w := range want {
			require.Contains(t, err.Error(), w)
		}
	}

	// A name that is not a plain identifier, or not its directory's, is
	// refused too.
	_, err := load(t, plugin.Config{}, map[string]pkg{"tidy": {manifest: map[string]any{"name": "slack.send_message"}, files: map[string]string{"execute": sh(okExecute)}}})
	require.ErrorContains(t, err, "directory name")

	s, err := load(t, plugin.Config{}, map[string]pkg{"tidy_up": {files: map[string]string{"execute": sh(okExecute)}}})
	require.NoError(t, err)
	defs, err := s.ListActions(context.Background(), executors.ExecContext{})
	require.NoError(t, err)
	require.Len(t, defs, 1)
	require.Equal(t, "tidy_up", defs[0].ID)
	require.Equal(t, executors.TierR4, defs[0].Tier, "a missing tier is treated as R4")
}

// Rule 2: with code execution off nothing runs.
func TestExecute_NothingRunsWhenCodeExecutionIsOff(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "ran")
	s, err := load(t, plugin.Config{}, map[string]pkg{"touch": {
		manifest: map[string]any{"riskTier": "R1"},
		files:    map[string]string{"execute": sh("touch " + marker + "; echo '{}'")},
	}})
	require.NoError(t, err)
	require.Equal(t, plugin.DisabledReason, s.Disabled())
	defs, err := s.ListActions(context.Background(), executors.ExecContext{})
	require.NoError(t, err)
	require.Len(t, defs, 1, "disabled plugins are still listed")

	_, e := execute(t, s, "touch", `{}`)
	require.NotNil(t, e)
	require.Equal(t, "source_disabled", e.Code)
	require.False(t, e.Retryable)
	require.NoFileExists(t, marker)
}

// Rule 3: a child process gets the input on stdin, answers on stdout,
// runs in a working directory of its own with a scrubbed environment.
func TestExecute_ChildProcessContract(t *testing.T) {
	t.Setenv("OUTBOXD_SECRETS_KEY", "very-secret-key")
	t.Setenv("DATABASE_URL", "postgres://user:pw@db/outboxd")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-secret")
	// What it sees, reported on stdout with shell builtins only: stdin,
	// the working directory and the names and values of its environment.
	s := mustLoad(t, plugin.Config{}, map[string]pkg{"probe": {
		manifest: map[string]any{"riskTier": "R1"},
		files: map[string]string{"execute": sh(
			"read -r line\n" +
				`names=""; for w in $(export -p); do case $w in *=*) names="$names ${w%%=*}";; esac; done` + "\n" +
				"echo 'a note on stderr' >&2\n" +
				`printf '{"answer": 42, "stdin": %s, "pwd": "%s", "names": "%s", "path": "%s", "home": "%s", "lang": "%s", "key": "%s", "leaked": "%s%s%s"}' "$line" "$PWD" "$names" "$PATH" "$HOME" "$LANG" "$OUTBOXD_IDEMPOTENCY_KEY" "$OUTBOXD_SECRETS_KEY" "$DATABASE_URL" "$AWS_SECRET_ACCESS_KEY"`)},
	}})
	res, e := execute(t, s, "probe", `{"q": "life"}`)
	require.Nil(t, e)
	require.NotNil(t, res.Steps)
	require.True(t, res.Steps.Verification.OK)
	var seen struct {
		Answer                            int
		Stdin                             json.RawMessage
		PWD, Names, Path, Home, Lang, Key string
		Leaked                            string
	}
	require.NoError(t, json.Unmarshal(res.Data, &seen), string(res.Data))
	require.Equal(t, 42, seen.Answer)
	require.JSONEq(t, `{"input": {"q": "life"}}`, string(seen.Stdin))
	require.Contains(t, seen.PWD, "outboxd-plugin-")
	require.NoDirExists(t, seen.PWD, "the working directory is removed afterwards")

	var names []string
	for _, n := range strings.Fields(seen.Names) {
		if n != "PWD" && n != "OLDPWD" && n != "SHLVL" && n != "_" { // the shell's own
			names = append(names, n)
		}
	}
	require.ElementsMatch(t, []string{"PATH", "HOME", "LANG", "OUTBOXD_IDEMPOTENCY_KEY"}, names)
	require.Equal(t, "/usr/local/bin:/usr/bin:/bin", seen.Path)
	require.Equal(t, seen.PWD, seen.Home)
	require.Equal(t, "C.UTF-8", seen.Lang)
	require.Equal(t, "key-123", seen.Key)
	require.Empty(t, seen.Leaked, "none of outboxd's environment")
}

// Rule 3: past its timeout a child is killed with its process group, so
// what it started in the background dies too.
func TestExecute_TimeoutKillsTheProcessGroup(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	s := mustLoad(t, unsandboxed(plugin.Config{Timeout: 300 * time.Millisecond}), map[string]pkg{"hang": {
		manifest: map[string]any{"riskTier": "R1"},
		files:    map[string]string{"execute": sh(writeGrandchild(out) + "\nsleep 60")},
	}})
	start := time.Now()
	_, e := execute(t, s, "hang", `{}`)
	require.Less(t, time.Since(start), 5*time.Second)
	require.NotNil(t, e)
	require.Equal(t, "plugin_timeout", e.Code)
	require.True(t, e.Retryable, "a timeout is retried with the same idempotency key")
	requireGone(t, readPID(t, filepath.Join(out, "grandchild")))
}

// Rule 3: when outboxd stops waiting (shutdown, the call deadline) the
// group is killed too.
func TestExecute_CancelKillsTheProcessGroup(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	s := mustLoad(t, unsandboxed(plugin.Config{Timeout: time.Minute}), map[string]pkg{"hang": {
		manifest: map[string]any{"riskTier": "R1"},
		files:    map[string]string{"execute": sh(writeGrandchild(out) + "\nsleep 60")},
	}})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// Cancel once the grandchild runs.
		for {
			if _, err := os.Stat(filepath.Join(out, "grandchild")); err == nil {
				cancel()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	_, err := s.Execute(ctx, "hang", json.RawMessage(`{}`), executors.ExecContext{IdempotencyKey: "k"})
	var e *executors.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, "plugin_interrupted", e.Code)
	require.True(t, e.Retryable)
	requireGone(t, readPID(t, filepath.Join(out, "grandchild")))
}

// Rule 3: output past the cap kills the child and fails for good.
func TestExecute_OutputIsCapped(t *testing.T) {
	t.Parallel()
	s := mustLoad(t, plugin.Config{MaxOutputBytes: 1000}, map[string]pkg{"flood": {
		manifest: map[string]any{"riskTier": "R1"},
		files:    map[string]string{"execute": sh("while :; do echo xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; done")},
	}})
	_, e := execute(t, s, "flood", `{}`)
	require.NotNil(t, e)
	require.Equal(t, "plugin_output_too_large", e.Code)
	require.False(t, e.Retryable)
}

// A plugin says how it failed: its error on stdout, exit status 75 for a
// transient failure.
func TestExecute_FailureClassification(t *testing.T) {
	t.Parallel()
	s := mustLoad(t, plugin.Config{}, map[string]pkg{
		"broken": {manifest: map[string]any{"riskTier": "R1"}, files: map[string]string{
			"execute": sh(`echo '{"error": {"code": "no_such_thing", "message": "thing 7 does not exist"}}'; exit 3`)}},
		"flaky": {manifest: map[string]any{"riskTier": "R1"}, files: map[string]string{"execute": sh("exit 75")}},
		"bad":   {manifest: map[string]any{"riskTier": "R1"}, files: map[string]string{"execute": sh("exit 1")}},
	})
	_, e := execute(t, s, "broken", `{}`)
	require.Equal(t, "no_such_thing", e.Code)
	require.Equal(t, "thing 7 does not exist", e.Message)
	require.False(t, e.Retryable)

	_, e = execute(t, s, "flaky", `{}`)
	require.Equal(t, "plugin_failed", e.Code)
	require.True(t, e.Retryable)

	_, e = execute(t, s, "bad", `{}`)
	require.Equal(t, "plugin_failed", e.Code)
	require.Contains(t, e.Message, "exited with status 1")
	require.False(t, e.Retryable)
}

// Rule 5: declared commands pass the allowlist, or the package is
// refused before anything runs.
func TestLoad_DeclaredCommandsPassTheAllowlist(t *testing.T) {
	t.Parallel()
	decl := func(field, cmd string) map[string]pkg {
		m := map[string]any{"riskTier": "R1"}
		if field == "verification" {
			m["verification"] = map[string]any{"commands": []string{cmd}}
		} else {
			m["permissions"] = map[string]any{"commands": []string{cmd}}
		}
		return map[string]pkg{"check": {manifest: m, files: map[string]string{"execute": sh(okExecute)}}}
	}
	_, err := load(t, plugin.Config{}, decl("verification", "test -f done.txt"))
	require.ErrorContains(t, err, `verification.commands: command "test -f done.txt" is not on plugins.command_allowlist`)
	_, err = load(t, plugin.Config{CommandAllowlist: []string{"test -d"}}, decl("permissions", "test -f done.txt"))
	require.ErrorContains(t, err, `permissions.commands: command "test -f done.txt" is not on plugins.command_allowlist`)
	_, err = load(t, plugin.Config{CommandAllowlist: []string{"rm"}}, decl("verification", "rm -rf / ; true"))
	require.ErrorContains(t, err, "shell syntax")

	_, err = load(t, plugin.Config{CommandAllowlist: []string{"test -f"}}, decl("verification", "test -f done.txt"))
	require.NoError(t, err)
	_, err = load(t, plugin.Config{CommandAllowlist: []string{"curl"}}, decl("permissions", "curl https://example.com"))
	require.NoError(t, err)
}

// What a plugin says is stored as text: a NUL or bytes that are not UTF-8
// in its error or its checks, which Postgres refuses (the outcome could
// not be recorded, and each attempt ran the plugin again), come back as
// U+FFFD.
func TestExecute_WhatThePluginSaysIsStorable(t *testing.T) {
	t.Parallel()
	s := mustLoad(t, plugin.Config{}, map[string]pkg{
		"garbled_error": {manifest: map[string]any{"riskTier": "R1"}, files: map[string]string{
			"execute": sh(`printf '{"error": {"code": "bad\\u0000code\377", "message": "bad\\u0000message\377"}}'; exit 3`)}},
		"garbled_check": {manifest: map[string]any{"riskTier": "R1"}, files: map[string]string{
			"execute": sh(okExecute),
			"verify":  sh(`printf '{"ok": false, "checks": [{"name": "n\\u0000ame\377", "ok": false, "detail": "d\\u0000etail\377"}]}'`)}},
	})
	_, e := execute(t, s, "garbled_error", `{}`)
	require.Equal(t, "bad\uFFFDcode\uFFFD", e.Code)
	require.Equal(t, "bad\uFFFDmessage\uFFFD", e.Message)

	_, e = execute(t, s, "garbled_check", `{}`)
	require.Equal(t, "verification_failed", e.Code)
	require.Equal(t, "verification failed: verify verify answered ok: false; n\uFFFDame\uFFFD d\uFFFDetail\uFFFD", e.Message)
	require.Equal(t, executors.Check{Name: "n\uFFFDame\uFFFD", Detail: "d\uFFFDetail\uFFFD"}, e.Steps.Verification.Checks[1])
}

// Declared verification commands run after execute, in its working
// directory, each a check.
func TestExecute_VerificationCommandsAreChecks(t *testing.T) {
	t.Parallel()
	m := func() map[string]any {
		return map[string]any{"riskTier": "R1", "verification": map[string]any{"commands": []string{"test -f done.txt"}},
			"permissions": map[string]any{"filesystem": "workspace"}}
	}
	s := mustLoad(t, plugin.Config{CommandAllowlist: []string{"test -f"}}, map[string]pkg{
		"leaves_file": {manifest: m(), files: map[string]string{"execute": sh(": > done.txt; echo '{}'")}},
		"forgets":     {manifest: m(), files: map[string]string{"execute": sh("echo '{}'")}},
	})
	res, e := execute(t, s, "leaves_file", `{}`)
	require.Nil(t, e)
	require.Equal(t, []executors.Check{{Name: "test -f done.txt", OK: true}}, res.Steps.Verification.Checks)

	_, e = execute(t, s, "forgets", `{}`)
	require.NotNil(t, e)
	require.Equal(t, "verification_failed", e.Code)
	require.False(t, e.Steps.Verification.OK)
	require.Equal(t, "test -f done.txt", e.Steps.Verification.Checks[0].Name)
	require.False(t, e.Steps.Rollback.Attempted, "no rollback shipped")
}

// Rule 6: an R2 action must ship verify and rollback.
func TestLoad_R2RequiresRollback(t *testing.T) {
	t.Parallel()
	r2 := map[string]any{"riskTier": "R2"}
	_, err := load(t, plugin.Config{}, map[string]pkg{"write": {manifest: r2, files: map[string]string{
		"execute": sh(okExecute), "verify": sh("echo '{\"ok\": true}'")}}})
	require.ErrorContains(t, err, "an R2 (write) plugin action requires rollback")
	_, err = load(t, plugin.Config{}, map[string]pkg{"write": {manifest: map[string]any{"riskTier": "R2"}, files: map[string]string{
		"execute": sh(okExecute), "rollback": sh("true")}}})
	require.ErrorContains(t, err, "requires verification")
	_, err = load(t, plugin.Config{}, map[string]pkg{"write": {manifest: map[string]any{"riskTier": "R1", "rollback": map[string]any{"required": true}}, files: map[string]string{
		"execute": sh(okExecute)}}})
	require.ErrorContains(t, err, "rollback.required in action.json requires rollback")

	_, err = load(t, plugin.Config{}, map[string]pkg{"write": {manifest: map[string]any{"riskTier": "R2"}, files: map[string]string{
		"execute": sh(okExecute), "verify": sh("echo '{\"ok\": true}'"), "rollback": sh("true")}}})
	require.NoError(t, err)
	_, err = load(t, plugin.Config{}, map[string]pkg{"write": {manifest: map[string]any{"riskTier": "R9"}, files: map[string]string{
		"execute": sh(okExecute)}}})
	require.ErrorContains(t, err, `riskTier "R9"`)
}

// Rule 6: a failed verification runs rollback once and fails for good
// (no second execute); the steps say whether the rollback worked.
func TestExecute_FailedVerificationRollsBackOnce(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	count := func(name string) int {
		b, _ := os.ReadFile(filepath.Join(state, name))
		return strings.Count(string(b), "x")
	}
	files := func(rollbackExit int) map[string]string {
		return map[string]string{
			"execute":  sh("cat > " + state + "/execute.in; echo x >> " + state + "/executes; echo '{\"id\": 7}'"),
			"verify":   sh("cat > " + state + "/verify.in; echo '{\"ok\": false, \"checks\": [{\"name\": \"record 7 exists\", \"ok\": false, \"detail\": \"not found\"}]}'"),
			"rollback": sh("cat > " + state + "/rollback.in; echo x >> " + state + "/rollbacks; exit " + strconv.Itoa(rollbackExit)),
		}
	}
	s := mustLoad(t, unsandboxed(plugin.Config{}), map[string]pkg{
		"create": {manifest: map[string]any{"riskTier": "R2"}, files: files(0)},
	})
	_, e := execute(t, s, "create", `{"title": "t"}`)
	require.NotNil(t, e)
	require.Equal(t, "verification_failed", e.Code)
	require.False(t, e.Retryable, "a failed verification is not retried: no second repair")
	require.Contains(t, e.Message, "record 7 exists not found")
	require.Contains(t, e.Message, "rolled back")
	require.Equal(t, executors.Step{Attempted: true, OK: true}, e.Steps.Rollback)
	require.Equal(t, executors.Step{}, e.Steps.Repair)
	require.False(t, e.Steps.Verification.OK)
	require.Equal(t, []executors.Check{
		{Name: "verify", OK: false, Detail: "verify answered ok: false"},
		{Name: "record 7 exists", OK: false, Detail: "not found"},
	}, e.Steps.Verification.Checks)
	require.Equal(t, 1, count("executes"))
	require.Equal(t, 1, count("rollbacks"))

	in, err := os.ReadFile(filepath.Join(state, "verify.in"))
	require.NoError(t, err)
	require.JSONEq(t, `{"input": {"title": "t"}, "output": {"id": 7}}`, string(in))
	in, err = os.ReadFile(filepath.Join(state, "rollback.in"))
	require.NoError(t, err)
	var rb map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(in, &rb))
	require.JSONEq(t, `{"id": 7}`, string(rb["output"]))
	require.Contains(t, string(rb["verification"]), `"ok":false`)

	s = mustLoad(t, unsandboxed(plugin.Config{}), map[string]pkg{
		"create": {manifest: map[string]any{"riskTier": "R2"}, files: files(1)},
	})
	_, e = execute(t, s, "create", `{"title": "t"}`)
	require.NotNil(t, e)
	require.Equal(t, "verification_failed", e.Code, e.Message)
	require.Equal(t, executors.Step{Attempted: true, OK: false}, e.Steps.Rollback)
	require.Contains(t, e.Message, "rollback exited with status 1")
}

// A package file still open for writing somewhere (here: by the test; in
// practice, a child forked meanwhile by another goroutine) is refused by the
// kernel for a moment; the run tries again rather than failing the call.
func TestExecute_StartsAFileOnceNoLongerOpenForWriting(t *testing.T) {
	t.Parallel()
	dir := writePackages(t, map[string]pkg{"ping": {files: map[string]string{"execute": sh(okExecute)}}})
	s, err := plugin.Load(&plugin.Config{Dir: dir, AllowCodeExecution: true}, core)
	require.NoError(t, err)
	f, err := os.OpenFile(filepath.Join(dir, "ping", "execute"), os.O_WRONLY, 0)
	require.NoError(t, err)
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		time.Sleep(30 * time.Millisecond)
		f.Close()
	}()
	res, e := execute(t, s, "ping", `{}`)
	<-closed
	require.Nil(t, e)
	require.JSONEq(t, `{"done": true}`, string(res.Data))
}

// outputSchema validates the output: a mismatch fails the invocation
// (and rolls back), without asking verify.
func TestExecute_OutputSchemaMismatchFails(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	s := mustLoad(t, unsandboxed(plugin.Config{}), map[string]pkg{"count": {
		manifest: map[string]any{
			"riskTier":     "R2",
			"inputSchema":  map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}},
			"outputSchema": map[string]any{"type": "object", "required": []string{"total"}, "properties": map[string]any{"total": map[string]any{"type": "integer"}}},
		},
		files: map[string]string{
			"execute":  sh(`read -r line; case "$line" in *'"n":1'*) echo '{"total": 1}';; *) echo '{"total": "many"}';; esac`),
			"verify":   sh("touch " + state + "/verified; echo '{\"ok\": true}'"),
			"rollback": sh("true"),
		},
	}})
	res, e := execute(t, s, "count", `{"n":1}`)
	require.Nil(t, e)
	require.JSONEq(t, `{"total": 1}`, string(res.Data))
	require.Equal(t, []executors.Check{{Name: "outputSchema", OK: true}, {Name: "verify", OK: true}}, res.Steps.Verification.Checks)
	require.NoError(t, os.Remove(filepath.Join(state, "verified")))

	_, e = execute(t, s, "count", `{"n":2}`)
	require.NotNil(t, e)
	require.Equal(t, "verification_failed", e.Code)
	require.Equal(t, "outputSchema", e.Steps.Verification.Checks[0].Name)
	require.False(t, e.Steps.Verification.Checks[0].OK)
	require.Contains(t, e.Steps.Verification.Checks[0].Detail, "total")
	require.Equal(t, executors.Step{Attempted: true, OK: true}, e.Steps.Rollback)
	require.NoFileExists(t, filepath.Join(state, "verified"), "verify is not asked about a wrong output")
}

// A .js executable runs with node.
func TestExecute_JavaScriptRunsWithNode(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the .js plugin path is not exercised")
	}
	s := mustLoad(t, plugin.Config{}, map[string]pkg{"add": {
		manifest: map[string]any{"riskTier": "R0"},
		files: map[string]string{"execute.js": `let s = '';
process.stdin.on('data', d => s += d);
process.stdin.on('end', () => {
  const {input} = JSON.parse(s);
  process.stdout.write(JSON.stringify({sum: input.a + input.b, key: process.env.OUTBOXD_IDEMPOTENCY_KEY}));
});`},
	}})
	res, e := execute(t, s, "add", `{"a": 2, "b": 3}`)
	require.Nil(t, e)
	require.JSONEq(t, `{"sum": 5, "key": "key-123"}`, string(res.Data))
}

// writeGrandchild is a shell line that starts a grandchild and records its
// pid in out/grandchild, renamed into place once written: the test's
// watcher, which cancels as soon as that file exists, never reads it
// empty.
func writeGrandchild(out string) string {
	return "sleep 60 & echo $! > " + out + "/grandchild.tmp && mv " + out + "/grandchild.tmp " + out + "/grandchild"
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	return pid
}

// requireGone waits briefly for pid to be gone: no such process, or a
// zombie waiting for its reaper.
func requireGone(t *testing.T, pid int) {
	t.Helper()
	require.Eventually(t, func() bool { return goneOrZombie(pid) }, 3*time.Second, 20*time.Millisecond, "process %d is still running", pid)
}
