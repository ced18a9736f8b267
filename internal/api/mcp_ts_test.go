package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors/linear/lineartest"
	"github.com/outboxd/outboxd/internal/app/apptest"
)

// mcpTSDir holds the official TypeScript MCP SDK, installed by `make
// mcp-ts` (which .ci/run runs).
var mcpTSDir = filepath.Join("..", "..", "tools", "mcp-ts")

// TestMCP_TypeScriptClient: a client nobody here wrote (the official
// TypeScript SDK, over Streamable HTTP) lists the tools, calls an allow
// tool and then an approval-gated one that a human approves while it
// waits. Without node or the installed SDK it is skipped, loudly.
func TestMCP_TypeScriptClient(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("*** NO NODE: the TypeScript MCP client test DID NOT RUN (install node 18+ and run make mcp-ts)")
	}
	if _, err := os.Stat(filepath.Join(mcpTSDir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		t.Skip("*** NO TYPESCRIPT MCP SDK: the TypeScript MCP client test DID NOT RUN (run make mcp-ts)")
	}
	linear := lineartest.New(t)
	b := apptest.Start(t, &apptest.Options{BaseURLs: map[string]string{"linear": linear.URL()}})
	b.StoreSlackToken("xoxb-mcp-ts")
	b.StoreToken("linear", "lin_api_mcp_ts_0123456789", "api_key")
	linear.SeedIssue("team-eng", "", "Checkout fails on Safari")

	// A human approves the Slack post while the client waits for it.
	approved := make(chan string, 1)
	go func() {
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			list := b.Do("GET", "/v1/invocations?status=pending", b.Owner(), nil)
			if invs, _ := list.Body["invocations"].([]any); len(invs) == 1 {
				id := invs[0].(map[string]any)["id"].(string)
				b.Do("POST", "/v1/invocations/"+id+"/approve", b.Owner(), map[string]string{"mode": "once"})
				approved <- id
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		approved <- ""
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "client.mjs")
	cmd.Dir = mcpTSDir
	args, _ := json.Marshal(message)
	cmd.Env = append(os.Environ(),
		"OUTBOXD_MCP_URL="+b.URL+"/mcp", "OUTBOXD_TOKEN="+b.Sandbox(),
		"MCP_ALLOW_TOOL=linear.list_issues", "MCP_ALLOW_ARGUMENTS={}",
		"MCP_APPROVAL_TOOL=slack.send_message", "MCP_APPROVAL_ARGUMENTS="+string(args))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "client.mjs: %s", stderr.String())
	require.NotEmpty(t, <-approved, "the call was never pending")

	var seen struct {
		Tools    []string `json:"tools"`
		Allow    result   `json:"allow"`
		Approval result   `json:"approval"`
	}
	require.NoError(t, json.Unmarshal(out, &seen), "%s", out)
	require.Contains(t, seen.Tools, "slack.send_message")
	require.Contains(t, seen.Tools, "linear.list_issues")
	require.False(t, seen.Allow.IsError, "%+v", seen.Allow)
	require.Len(t, seen.Allow.Structured["issues"], 1)
	require.False(t, seen.Approval.IsError, "%+v", seen.Approval)
	require.Equal(t, true, seen.Approval.Structured["ok"])
	require.Len(t, b.Slack.Requests(), 1)
	require.Equal(t, http.StatusOK, b.Do("GET", "/healthz", "", nil).Status)
}

// result is a tool result as the TypeScript client printed it.
type result struct {
	IsError    bool           `json:"isError"`
	Structured map[string]any `json:"structuredContent"`
}
