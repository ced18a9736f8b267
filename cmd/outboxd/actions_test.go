package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/client"
	"github.com/outboxd/outboxd/internal/domain/auth"
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
			{env, []string{"describe", "slack"}},
		} {
			code, _, stderr := agentRun(t, c.env, nil, c.args...)
			require.Equal(t, 4, code, "%v: %s", c.args, stderr)
		}
		// A command it does not have is an error, not its help and exit 0;
		// a wrong number of arguments shows the whole command.
		code, stdout, stderr := agentRun(t, env, nil, "gide", "slack")
		require.Equal(t, 4, code, stderr)
		require.Empty(t, stdout)
		require.Contains(t, stderr, `unknown command "gide" for "outboxd actions": did you mean guide?`)
		_, _, stderr = agentRun(t, env, nil, "run", "slack")
		require.Contains(t, stderr, "usage: outboxd actions run <integration> <action>")
	})
}

// pendingAPI is an outboxd as the agent CLI sees it whose invocation
// stays pending, or, with invokeHangs, whose invoke never answers.
func pendingAPI(t *testing.T, invokeHangs bool) *client.Session {
	t.Helper()
	const inv = `{"id":"inv-1","status":"pending","expires_at":"2030-01-02T03:04:05Z"}`
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/sessions/s1/events", quietEvents)
	mux.HandleFunc("POST /v1/sessions/s1/actions/invoke", func(w http.ResponseWriter, r *http.Request) {
		if invokeHangs {
			// Read to the end, so that the server sees the client go.
			_, _ = io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprintf(w, `{"invocation":%s,"invocation_id":"inv-1","status":"pending"}`, inv)
	})
	mux.HandleFunc("GET /v1/sessions/s1/actions/invocations/inv-1", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"invocation":%s}`, inv)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return client.New(srv.URL, "token").Session("s1")
}

// A run that stops waiting (--timeout, Ctrl-C) exits 1 but must not pass
// for a failure: the invocation may still be approved and run, and the
// same command waits for it again.
func TestActions_RunGivesUpWithAdvice(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name        string
		invokeHangs bool
		want        []string
	}{
		{"WhilePending", false, []string{
			"--timeout passed: invocation inv-1 is still pending: a human can still approve it until 2030-01-02T03:04:05Z, and then it runs.",
			"Run the same command again to wait for it",
			"If you no longer want it, withdraw it before it runs: outboxd actions cancel inv-1",
		}},
		{"BeforeTheInvokeAnswered", true, []string{
			"--timeout passed before outboxd answered: the action may have been invoked all the same, and may still run.",
			"Run the same command again to wait for it",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr strings.Builder
			r := &runner{agent: &agent{session: "s1", api: pendingAPI(t, c.invokeHangs)}, out: &stdout, log: &stderr}
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			err := r.run(ctx, "demo", "send_message", map[string]any{"text": "hi"})
			var ee *exitError
			require.ErrorAs(t, err, &ee)
			require.Equal(t, exitFailed, ee.code, "%v", err)
			for _, w := range c.want {
				require.Contains(t, err.Error(), w)
			}
			require.Empty(t, stdout.String())
			if !c.invokeHangs {
				require.Contains(t, stderr.String(), "waiting for approval of demo.send_message (invocation inv-1) until 2030-01-02T03:04:05Z")
			}
		})
	}
}

// An agent withdraws an invocation of its session that has not run; one
// that has run, another session's, an unknown one or a malformed id is
// refused with the exit code of its kind and changes nothing.
func TestActions_Cancel(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-cli-cancel")
	env := []string{"OUTBOXD_URL=" + b.URL, "OUTBOXD_TOKEN=" + b.Sandbox()}
	message := func(text string) map[string]any { return map[string]any{"channel": "C0123456789", "text": text} }

	t.Run("PendingIsCancelled", func(t *testing.T) {
		id := b.Invoke("send_message", message("withdraw me")).Body["invocation_id"].(string)
		require.Equal(t, "pending", b.Invocation(id)["status"])
		code, stdout, stderr := agentRun(t, env, nil, "cancel", id)
		require.Equal(t, exitCompleted, code, stderr)
		require.Regexp(t, `INVOCATION\s+ACTION\s+STATUS\n`+id+`\s+slack\.send_message\s+cancelled\n`, stdout)
		require.Equal(t, "cancelled", b.Invocation(id)["status"])

		id = b.Invoke("send_message", message("withdraw me too")).Body["invocation_id"].(string)
		code, stdout, stderr = agentRun(t, env, nil, "cancel", id, "--json")
		require.Equal(t, exitCompleted, code, stderr)
		var inv client.Invocation
		require.NoError(t, json.Unmarshal([]byte(stdout), &inv), stdout)
		require.Equal(t, id, inv.ID)
		require.Equal(t, "cancelled", inv.Status)
		require.Equal(t, "cancelled", b.Invocation(id)["status"])
	})

	t.Run("NotFoundExits4", func(t *testing.T) {
		otherSession := b.Token(auth.Claims{Kind: auth.KindSandbox, SessionID: "session-2"})
		theirs := b.Do("POST", "/v1/sessions/session-2/actions/invoke", otherSession, map[string]any{
			"integration": "slack", "action": "send_message", "params": message("not yours"),
		}).Body["invocation_id"].(string)
		for _, id := range []string{theirs, uuid.NewString()} {
			code, stdout, stderr := agentRun(t, env, nil, "cancel", id)
			require.Equal(t, exitUsage, code, stderr)
			require.Empty(t, stdout)
			require.Contains(t, stderr, "this session has no invocation "+id)
		}
		require.Equal(t, "pending", b.Invocation(theirs)["status"])
	})

	t.Run("MalformedIDSendsNothing", func(t *testing.T) {
		var requests atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			requests.Add(1)
			w.WriteHeader(http.StatusTeapot)
		}))
		t.Cleanup(srv.Close)
		for _, id := range []string{"not-an-id", "inv-1", ""} {
			code, stdout, stderr := agentRun(t, []string{"OUTBOXD_URL=" + srv.URL, "OUTBOXD_TOKEN=" + b.Sandbox()}, nil, "cancel", id)
			require.Equal(t, exitUsage, code, stderr)
			require.Empty(t, stdout)
			require.Contains(t, stderr, fmt.Sprintf("%q is not an invocation id: give the UUID", id))
		}
		require.Zero(t, requests.Load())
	})

	// Last: it lets the session's actions run without approval.
	t.Run("FinishedConflictsExits1", func(t *testing.T) {
		b.SetModes(map[string]string{"slack:send_message": "allow"})
		id := b.Invoke("send_message", message("too late")).Body["invocation"].(map[string]any)["id"].(string)
		b.WaitStatus(id, "completed", 15*time.Second)
		code, stdout, stderr := agentRun(t, env, nil, "cancel", id)
		require.Equal(t, exitFailed, code, stderr)
		require.Empty(t, stdout)
		require.Contains(t, stderr, "invocation "+id+" was not cancelled: it has started or ended, and only one that has not can be (HTTP 409: ")
		require.Contains(t, stderr, "completed", "the API's message says where it stands")
		require.Equal(t, "completed", b.Invocation(id)["status"])
	})
}

// Whatever way an invocation ended, the same command answers with it
// again: the message says so, and --idempotency-key asks anew.
func TestActions_RunAsksAnewWithAKeyOfItsOwn(t *testing.T) {
	var (
		mu   sync.Mutex
		keys []string
	)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/sessions/s1/events", quietEvents)
	mux.HandleFunc("POST /v1/sessions/s1/actions/invoke", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusGone)
		fmt.Fprint(w, `{"invocation":{"id":"inv-9","status":"expired"},"error":{"code":"expired","message":"the approval window closed"}}`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	t.Setenv("OUTBOXD_URL", srv.URL)
	t.Setenv("OUTBOXD_TOKEN", "x."+base64.RawURLEncoding.EncodeToString([]byte(`{"session_id":"s1"}`))+".y")

	run := func(args ...string) error {
		root := newRootCommand()
		root.SetArgs(append([]string{"actions", "run", "demo", "send_message", "--params", `{"text":"hi"}`}, args...))
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		return root.ExecuteContext(t.Context())
	}
	err := run()
	var ee *exitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, exitExpired, ee.code)
	require.Contains(t, err.Error(), "the approval window closed before anyone decided\n(invocation inv-9: this same command answers with it again; to ask anew, add --idempotency-key")
	require.ErrorAs(t, run("--idempotency-key", "mine"), &ee)
	require.Equal(t, exitExpired, ee.code)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, keys, 2)
	require.True(t, strings.HasPrefix(keys[0], "cli-"), "derived from the call: %s", keys[0])
	require.Equal(t, "mine", keys[1])
}

// An OUTBOXD_URL without its scheme is named as such, not left to a URL
// parser's complaint about a colon.
func TestActions_URLWithoutScheme(t *testing.T) {
	t.Setenv("OUTBOXD_TOKEN", "x."+base64.RawURLEncoding.EncodeToString([]byte(`{"session_id":"s1"}`))+".y")
	for _, u := range []string{"127.0.0.1:8080", "localhost:8080", "ftp://h", "http://"} {
		t.Setenv("OUTBOXD_URL", u)
		_, err := newAgent()
		var ee *exitError
		require.ErrorAs(t, err, &ee, u)
		require.Equal(t, exitUsage, ee.code)
		require.ErrorContains(t, err, "give its http:// or https:// URL", u)
	}
	t.Setenv("OUTBOXD_URL", "http://127.0.0.1:8080/")
	_, err := newAgent()
	require.NoError(t, err)
}

// quietEvents is session s1's event stream on which nothing happens.
func quietEvents(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}
