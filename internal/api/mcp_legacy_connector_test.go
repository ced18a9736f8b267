package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
)

// A connector whose server speaks only 2025-11-25 is listed and called
// for a client of either protocol version: the client's version is not
// the one outboxd speaks to the connector.
func TestMCP_ConnectorOfAnOlderProtocolForEitherClient(t *testing.T) {
	t.Parallel()
	legacy := mcp.NewServer(&mcp.Implementation{Name: "legacy", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}})
	legacy.AddTool(&mcp.Tool{Name: "lookup", Description: "Look something up.", InputSchema: map[string]any{"type": "object"},
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "looked up"}}}, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return legacy }, nil))
	t.Cleanup(srv.Close)

	b := apptest.Start(t, nil)
	r := b.Do("POST", "/v1/connectors", b.Owner(), map[string]any{"name": "legacy", "url": srv.URL, "transport": "remote_http"})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	name := strings.ReplaceAll(r.Body["connector"].(map[string]any)["source_id"].(string), ":", "_") + ".lookup"

	// 2026-07-28 first: the connector's tools are listed then (and cached).
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		session := mcpSessionAt(t, b, b.Sandbox(), version, nil)
		require.Contains(t, toolNames(t, session), name, version)
		res, err := session.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		require.NoError(t, err, version)
		require.False(t, res.IsError, callText(t, res))
		require.Equal(t, "looked up", callText(t, res), version)
	}
}
