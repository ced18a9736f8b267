package api_test

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app"
	"github.com/outboxd/outboxd/internal/app/apptest"
)

// callAnswer is what a tool call returned.
type callAnswer struct {
	res *mcp.CallToolResult
	err error
}

// waitingCalls starts calls of slack.send_message and tells when the
// server waits on each: its client hears the call's first progress
// notification.
type waitingCalls struct {
	t       *testing.T
	arrived chan any
}

func newWaitingCalls(t *testing.T) *waitingCalls {
	return &waitingCalls{t: t, arrived: make(chan any, 16)}
}

// options are the client options that hear the progress notifications.
func (w *waitingCalls) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		if r.Params.Progress == 0 {
			w.arrived <- r.Params.ProgressToken
		}
	}}
}

// start calls slack.send_message on session with ctx, with key as its
// idempotency key (none when empty), and returns once the server waits on
// it.
func (w *waitingCalls) start(ctx context.Context, session *mcp.ClientSession, key, token string) chan callAnswer {
	w.t.Helper()
	p := &mcp.CallToolParams{Name: "slack.send_message", Arguments: message}
	if key != "" {
		p.Meta = mcp.Meta{"idempotency_key": key}
	}
	return w.startCall(ctx, session, p, token)
}

// startCall calls p's tool on session with ctx and returns once the
// server waits on it.
func (w *waitingCalls) startCall(ctx context.Context, session *mcp.ClientSession, p *mcp.CallToolParams, token string) chan callAnswer {
	w.t.Helper()
	done := make(chan callAnswer, 1)
	p.SetProgressToken(token)
	go func() {
		res, err := session.CallTool(ctx, p)
		done <- callAnswer{res, err}
	}()
	select {
	case got := <-w.arrived:
		require.Equal(w.t, token, got)
	case a := <-done:
		w.t.Fatalf("the %s call returned at once: %v %v", token, a.res, a.err)
	case <-time.After(30 * time.Second):
		w.t.Fatalf("the %s call does not wait", token)
	}
	return done
}

// answered returns a call's answer.
func answered(t *testing.T, done chan callAnswer) callAnswer {
	t.Helper()
	select {
	case a := <-done:
		return a
	case <-time.After(30 * time.Second):
		t.Fatal("the call did not return")
		return callAnswer{}
	}
}

// mcpCalls is outboxd_mcp_calls_total{outcome} of b's process.
func mcpCalls(t *testing.T, b *apptest.Bundle, outcome string) int {
	t.Helper()
	m := regexp.MustCompile(`(?m)^outboxd_mcp_calls_total\{outcome="` + outcome + `"\} (\d+)$`).FindSubmatch(b.Do("GET", "/metrics", "", nil).Raw)
	if m == nil {
		return 0
	}
	n, err := strconv.Atoi(string(m[1]))
	require.NoError(t, err)
	return n
}

// waitCounted waits until b's process has counted n calls cancelled (or,
// as it did before, invalid): it has handled their cancellation.
func waitCounted(t *testing.T, b *apptest.Bundle, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		return mcpCalls(t, b, "cancelled")+mcpCalls(t, b, "invalid") == n
	}, 30*time.Second, 20*time.Millisecond)
}

// onlyInvocation is the organization's only invocation.
func onlyInvocation(t *testing.T, b *apptest.Bundle) map[string]any {
	t.Helper()
	invs := b.Do("GET", "/v1/invocations", b.Owner(), nil).Body["invocations"].([]any)
	require.Len(t, invs, 1, "one invocation for the key")
	return invs[0].(map[string]any)
}

// A 2026-07-28 call with an idempotency key whose request ends (its client
// lost the connection, or gave up waiting: the protocol tells them apart
// by nothing) leaves its invocation: the client said it would retry, and
// its retry with the key gets the result of the one execution.
func TestMCP_KeyedCallOutlivesItsEndedRequest(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-mcp-dropped")
	calls := newWaitingCalls(t)
	session := mcpSessionAt(t, b, b.Sandbox(), "2026-07-28", calls.options())

	ctx, drop := context.WithCancel(context.Background())
	first := calls.start(ctx, session, "dropped-1", "first")
	drop()
	require.Error(t, answered(t, first).err)
	waitCounted(t, b, 1)
	inv := onlyInvocation(t, b)
	require.Equal(t, "pending", inv["status"], "the ended request left its invocation")

	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/invocations/"+inv["id"].(string)+"/approve", b.Owner(), map[string]string{"mode": "once"}).Status)
	res, err := session.CallTool(context.Background(), &mcp.CallToolParams{Name: "slack.send_message", Arguments: message, Meta: mcp.Meta{"idempotency_key": "dropped-1"}})
	require.NoError(t, err)
	require.False(t, res.IsError, callText(t, res))
	require.Equal(t, true, res.StructuredContent.(map[string]any)["ok"])
	require.Equal(t, inv["id"], onlyInvocation(t, b)["id"], "the retry's is the same invocation")
	require.Len(t, b.Slack.Requests(), 1, "executed once")
}

// With two API processes, a retry with the same idempotency key that its
// client cancels in one (2025-11-25: notifications/cancelled, heard only
// by the retry's process) does not withdraw the invocation the first call
// still waits on in the other: a retry never withdraws.
func TestMCP_RetrysCancelLeavesTheFirstCallInAnotherProcess(t *testing.T) {
	t.Parallel()
	api1 := apptest.Start(t, nil)
	api1.StoreSlackToken("xoxb-mcp-two-processes")
	api2 := apptest.Start(t, &apptest.Options{Role: app.RoleAPI, DatabaseURL: api1.DBURL, SecretsKey: api1.Config.SecretsKey})
	calls := newWaitingCalls(t)
	session1 := mcpSessionAt(t, api1, api1.Sandbox(), "2025-11-25", calls.options())
	session2 := mcpSessionAt(t, api2, api2.Sandbox(), "2025-11-25", calls.options())

	first := calls.start(context.Background(), session1, "two-processes", "first")
	ctx, cancel := context.WithCancel(context.Background())
	retry := calls.start(ctx, session2, "two-processes", "retry")
	cancel()
	require.Error(t, answered(t, retry).err)
	waitCounted(t, api2, 1)
	inv := onlyInvocation(t, api1)
	require.Equal(t, "pending", inv["status"], "the first call still waits on it")

	require.Equal(t, http.StatusOK, api1.Do("POST", "/v1/invocations/"+inv["id"].(string)+"/approve", api1.Owner(), map[string]string{"mode": "once"}).Status)
	a := answered(t, first)
	require.NoError(t, a.err)
	require.False(t, a.res.IsError, callText(t, a.res))
	require.Equal(t, true, a.res.StructuredContent.(map[string]any)["ok"])
	require.Len(t, api1.Slack.Requests(), 1)
}

// With two API processes, the call that created the invocation, which its
// client cancels in one (2025-11-25: notifications/cancelled), does not
// withdraw it while another call waits on it in the other process (a retry
// with the same idempotency key, outboxd_wait): that call gets the result
// of the one execution.
func TestMCP_CreatorsCancelLeavesWhatAnotherProcessWaitsOn(t *testing.T) {
	t.Parallel()
	for _, other := range []string{"retry", "wait"} {
		t.Run(other, func(t *testing.T) {
			t.Parallel()
			api1 := apptest.Start(t, nil)
			api1.StoreSlackToken("xoxb-mcp-creator-" + other)
			api2 := apptest.Start(t, &apptest.Options{Role: app.RoleAPI, DatabaseURL: api1.DBURL, SecretsKey: api1.Config.SecretsKey})
			calls := newWaitingCalls(t)
			session1 := mcpSessionAt(t, api1, api1.Sandbox(), "2025-11-25", calls.options())
			session2 := mcpSessionAt(t, api2, api2.Sandbox(), "2025-11-25", calls.options())

			ctx, cancel := context.WithCancel(context.Background())
			first := calls.start(ctx, session1, "creator-"+other, "first")
			id := onlyInvocation(t, api1)["id"].(string)
			var waits chan callAnswer
			if other == "retry" {
				waits = calls.start(context.Background(), session2, "creator-"+other, other)
			} else {
				waits = calls.startCall(context.Background(), session2, &mcp.CallToolParams{Name: "outboxd_wait", Arguments: map[string]any{"invocation_id": id}}, other)
			}
			cancel()
			require.Error(t, answered(t, first).err)
			waitCounted(t, api1, 1)
			require.Equal(t, "pending", api1.Invocation(id)["status"], "the %s still waits on it", other)

			require.Equal(t, http.StatusOK, api1.Do("POST", "/v1/invocations/"+id+"/approve", api1.Owner(), map[string]string{"mode": "once"}).Status)
			a := answered(t, waits)
			require.NoError(t, a.err)
			require.False(t, a.res.IsError, callText(t, a.res))
			require.Equal(t, true, a.res.StructuredContent.(map[string]any)["ok"])
			require.Len(t, api1.Slack.Requests(), 1)
		})
	}
}

// A client that cancels its outboxd_wait is counted as cancelled, not as
// the pending answer it never got; the invocation stays pending (a wait
// never withdraws).
func TestMCP_CancelledWaitIsCountedCancelled(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-mcp-wait-cancelled")
	calls := newWaitingCalls(t)
	session := mcpSessionAt(t, b, b.Sandbox(), "2026-07-28", calls.options())
	// A keyed call whose request ended leaves its invocation pending.
	ctx, drop := context.WithCancel(context.Background())
	first := calls.start(ctx, session, "wait-cancelled", "call")
	drop()
	require.Error(t, answered(t, first).err)
	require.Eventually(t, func() bool { return mcpCalls(t, b, "cancelled") == 1 }, 30*time.Second, 20*time.Millisecond)
	id := onlyInvocation(t, b)["id"].(string)

	ctx, cancel := context.WithCancel(context.Background())
	wait := calls.startCall(ctx, session, &mcp.CallToolParams{Name: "outboxd_wait", Arguments: map[string]any{"invocation_id": id}}, "wait")
	cancel()
	require.Error(t, answered(t, wait).err)
	require.Eventually(t, func() bool { return mcpCalls(t, b, "cancelled") == 2 }, 30*time.Second, 20*time.Millisecond)
	require.Zero(t, mcpCalls(t, b, "pending"))
	require.Equal(t, "pending", b.Invocation(id)["status"])
}
