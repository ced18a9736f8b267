package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
)

// A retry with the same idempotency key that waits on the invocation keeps
// it: the first call's client cancelling (a timeout, then the retry) does
// not withdraw what the retry still waits for, and the action runs once.
func TestMCP_CancelKeepsWhatARetryWaitsFor(t *testing.T) {
	t.Parallel()
	for _, version := range protocolVersions {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			testCancelWhileRetryWaits(t, version)
		})
	}
}

func testCancelWhileRetryWaits(t *testing.T, version string) {
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-mcp-retry")
	waiting := map[string]chan struct{}{"first": make(chan struct{}), "retry": make(chan struct{})}
	session := mcpSessionAt(t, b, b.Sandbox(), version, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			token, _ := r.Params.ProgressToken.(string)
			if ch := waiting[token]; ch != nil && r.Params.Progress == 0 {
				close(ch)
			}
		},
	})
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	call := func(ctx context.Context, token string) chan answer {
		done := make(chan answer, 1)
		go func() {
			p := &mcp.CallToolParams{Name: "slack.send_message", Arguments: message, Meta: mcp.Meta{"idempotency_key": "retry-" + version}}
			p.SetProgressToken(token)
			res, err := session.CallTool(ctx, p)
			done <- answer{res, err}
		}()
		return done
	}
	arrived := func(name string) {
		select {
		case <-waiting[name]:
		case <-time.After(15 * time.Second):
			t.Fatalf("the %s call does not wait", name)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	first := call(ctx, "first")
	arrived("first")
	retry := call(context.Background(), "retry")
	arrived("retry")
	cancel()
	require.Error(t, (<-first).err)
	// The first call's end is counted once the server has handled it.
	require.Eventually(t, func() bool {
		return strings.Contains(string(b.Do("GET", "/metrics", "", nil).Raw), `outboxd_mcp_calls_total{outcome="cancelled"} 1`)
	}, 15*time.Second, 20*time.Millisecond)

	invs := b.Do("GET", "/v1/invocations", b.Owner(), nil).Body["invocations"].([]any)
	require.Len(t, invs, 1, "one invocation for the key")
	inv := invs[0].(map[string]any)
	require.Equal(t, "pending", inv["status"], "the retry still waits for it")
	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/invocations/"+inv["id"].(string)+"/approve", b.Owner(), map[string]string{"mode": "once"}).Status)
	select {
	case a := <-retry:
		require.NoError(t, a.err)
		require.False(t, a.res.IsError, callText(t, a.res))
		require.Equal(t, true, a.res.StructuredContent.(map[string]any)["ok"])
	case <-time.After(30 * time.Second):
		t.Fatal("the retry did not return after the approval")
	}
	require.Len(t, b.Slack.Requests(), 1)
}
