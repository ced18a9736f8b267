package main

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
)

// agentRun runs `outboxd actions ...` as its own process with the agent's
// environment and returns its exit code, stdout and stderr; while it runs,
// onStderr sees its stderr as it grows until it returns true.
func agentRun(t *testing.T, env []string, onStderr func(stderr string) bool, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"actions"}, args...)...)
	cmd.Env = append(append(os.Environ(), "OUTBOXD_TEST_MAIN=1"), env...)
	stdout, stderr := &apptest.Logs{}, &apptest.Logs{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	if onStderr != nil {
		for deadline := time.Now().Add(20 * time.Second); !onStderr(stderr.String()); time.Sleep(20 * time.Millisecond) {
			require.True(t, time.Now().Before(deadline), "stderr: %s", stderr.String())
		}
	}
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("outboxd actions %v did not finish: %s", args, stderr.String())
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// pendingID returns the id of the session's pending invocation, once
// there is one.
func pendingID(t *testing.T, b *apptest.Bundle) string {
	t.Helper()
	r := b.Do("GET", "/v1/invocations?status=pending", b.Owner(), nil)
	require.Equal(t, http.StatusOK, r.Status)
	list := r.Body["invocations"].([]any)
	require.Len(t, list, 1)
	return list[0].(map[string]any)["id"].(string)
}

func TestActions_Run(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-cli")
	env := []string{"OUTBOXD_URL=" + b.URL, "OUTBOXD_TOKEN=" + b.Sandbox()}
	waiting := func(s string) bool { return strings.Contains(s, "waiting for approval") }

	t.Run("ApprovedPrintsResult", func(t *testing.T) {
		params := `{"channel":"C0123456789","text":"from the cli"}`
		approved := func(s string) bool {
			if !waiting(s) {
				return false
			}
			r := b.Do("POST", "/v1/invocations/"+pendingID(t, b)+"/approve", b.Admin(), map[string]string{"mode": "once"})
			require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
			return true
		}
		code, stdout, stderr := agentRun(t, env, approved, "run", "slack", "send_message", "--params", params)
		require.Equal(t, 0, code, stderr)
		require.Contains(t, stderr, "approved by user-admin")
		var result map[string]any
		require.NoError(t, json.Unmarshal([]byte(stdout), &result), stdout)
		require.Equal(t, true, result["ok"])
		require.Len(t, b.Slack.Requests(), 1)

		// The same call again finds the same invocation: no second message.
		code, again, _ := agentRun(t, env, nil, "run", "slack", "send_message", "--params", params)
		require.Equal(t, 0, code)
		require.JSONEq(t, stdout, again)
		require.Len(t, b.Slack.Requests(), 1)
	})

	t.Run("DeniedExits2", func(t *testing.T) {
		denied := func(s string) bool {
			if !waiting(s) {
				return false
			}
			r := b.Do("POST", "/v1/invocations/"+pendingID(t, b)+"/deny", b.Admin(), map[string]string{"reason": "not during the freeze"})
			require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
			return true
		}
		code, stdout, stderr := agentRun(t, env, denied, "run", "slack", "send_message", "--params", `{"channel":"C0123456789","text":"deny me"}`)
		require.Equal(t, 2, code, stderr)
		require.Empty(t, stdout)
		require.Contains(t, stderr, "not during the freeze")
	})

	t.Run("ListAndGuide", func(t *testing.T) {
		code, stdout, stderr := agentRun(t, env, nil, "list")
		require.Equal(t, 0, code, stderr)
		require.Contains(t, stdout, "slack.send_message")
		require.Contains(t, stdout, "require_approval")
		require.Contains(t, stdout, "R2", "the action's risk tier")
		code, stdout, _ = agentRun(t, env, nil, "list", "--json")
		require.Equal(t, 0, code)
		require.True(t, json.Valid([]byte(stdout)))
		code, stdout, _ = agentRun(t, env, nil, "guide", "slack")
		require.Equal(t, 0, code)
		require.Contains(t, stdout, "slack.send_message")
	})

	t.Run("InvalidParamsNameTheField", func(t *testing.T) {
		code, stdout, stderr := agentRun(t, env, nil, "run", "slack", "send_message", "--params", `{"channel":"C0123456789","text":7}`)
		require.Equal(t, 4, code, stderr)
		require.Empty(t, stdout)
		require.Contains(t, stderr, "invalid params for slack.send_message")
		require.Regexp(t, `\n  text: .*string`, stderr, "the param to fix, and what it must be")
	})

	t.Run("UsageAndAuthExit4", func(t *testing.T) {
		for _, c := range []struct {
			env  []string
			args []string
		}{
			{[]string{"OUTBOXD_URL=", "OUTBOXD_TOKEN="}, []string{"list"}},
			{[]string{"OUTBOXD_URL=" + b.URL, "OUTBOXD_TOKEN=not-a-jwt"}, []string{"list"}},
			{[]string{"OUTBOXD_URL=" + b.URL, "OUTBOXD_TOKEN=" + b.Sandbox()[:20] + ".eyJzZXNzaW9uX2lkIjoicyJ9.x"}, []string{"list"}},
			{env, []string{"run", "slack", "send_message", "--params", "{not json"}},
			{env, []string{"run", "slack"}},
			{env, []string{"run", "slack", "send_message", "--bogus"}},
			{env, []string{"run", "slack", "send_message", "--params", `{"channel":"C0123456789"}`}},
			{env, []string{"guide", "nope"}},
		} {
			code, _, stderr := agentRun(t, c.env, nil, c.args...)
			require.Equal(t, 4, code, "%v: %s", c.args, stderr)
		}
	})
}
