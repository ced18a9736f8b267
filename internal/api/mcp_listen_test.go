package api_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
)

// subscriptions/listen is a 2026-07-28 method: in a 2025-11-25 session
// (which hears of changes on its stream) it is refused at once, where it
// was held until the session closed, unanswered, one more for each POST,
// and counted the session again in outboxd_mcp_sessions.
func TestMCP_ListenIsNotASessionsMethod(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	session := rawSession(t, b)
	status, body, _ := postMCP(t, b, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, "2025-11-25", session)
	require.Equal(t, http.StatusOK, status, body)
	require.Equal(t, "1", mcpGauge(b), "the session is told of changes")

	// A guard, not a bound: the refusal comes at once.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", b.URL+"/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":3,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+b.Sandbox())
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", session)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err, "the listen is answered")
	require.Contains(t, string(raw), `"code":-32601`)
	require.Equal(t, "1", mcpGauge(b), "the session is counted once")
}

// mcpGauge is outboxd_mcp_sessions of b's process.
func mcpGauge(b *apptest.Bundle) string {
	for _, l := range strings.Split(string(b.Do("GET", "/metrics", "", nil).Raw), "\n") {
		if v, ok := strings.CutPrefix(l, "outboxd_mcp_sessions "); ok {
			return v
		}
	}
	return ""
}
