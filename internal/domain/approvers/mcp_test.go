package approvers_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/approvers"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/policy"
)

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// An MCP call on a request that needs two approvers keeps waiting after
// the first approval, saying how many more it waits for, and returns the
// result after the second.
func TestApprovers_MCPCallWaitsForTheLastApproval(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{Approvals: approvers.Config{Required: map[policy.Tier]int{policy.TierR2: 2}}})
	b.StoreSlackToken("xoxb-mcp-approvers")
	progress := make(chan string, 64)
	client := mcp.NewClient(&mcp.Implementation{Name: "approvers-test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { progress <- r.Params.Message },
	})
	session, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: b.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{b.Sandbox(), http.DefaultTransport}},
	}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { session.Close() })

	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		call := &mcp.CallToolParams{Name: "slack.send_message", Arguments: map[string]any{"channel": "C0123456789", "text": "two keys over MCP"}}
		call.SetProgressToken("approvers-1")
		res, err := session.CallTool(context.Background(), call)
		if err != nil {
			res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
		}
		done <- res
	}()
	waitFor := func(want string) {
		t.Helper()
		deadline := time.After(15 * time.Second)
		for {
			select {
			case msg := <-progress:
				if strings.Contains(msg, want) {
					return
				}
			case <-deadline:
				t.Fatalf("no progress saying %q", want)
			}
		}
	}
	waitFor("waiting for 2 more approval(s) of 2")

	list := b.Do("GET", "/v1/invocations?status=pending", b.Owner(), nil)
	id := list.Body["invocations"].([]any)[0].(map[string]any)["id"].(string)
	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/invocations/"+id+"/approve", user(b, "carol", auth.RoleAdmin), map[string]string{"mode": "once"}).Status)
	waitFor("waiting for 1 more approval(s) of 2")
	select {
	case res := <-done:
		t.Fatalf("the call returned after one approval of two: %+v", res)
	default:
	}
	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/invocations/"+id+"/approve", user(b, "dave", auth.RoleAdmin), map[string]string{"mode": "once"}).Status)
	select {
	case res := <-done:
		require.False(t, res.IsError, "%+v", res.Content)
	case <-time.After(30 * time.Second):
		t.Fatal("the call did not return after the second approval")
	}
	require.Equal(t, 1, sent(b, "two keys over MCP"))
}
