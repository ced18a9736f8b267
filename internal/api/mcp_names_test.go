package api_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
)

// A connector's tools whose MCP names would be the same ("get.item" and
// "get_item", two long names alike in their first 128 characters) are
// each listed under a name of their own, and each name calls its tool; a
// name that spells its tool as it is stays as it was.
func TestMCP_ToolsWhoseNamesCollideAreEachCalled(t *testing.T) {
	t.Parallel()
	srv := newMCPServer(t)
	long := "x" + strings.Repeat("y", 150)
	odd := []string{"get.item", "get_item", long, long + "z", "créer"}
	for _, name := range odd {
		srv.addTool(name, "Odd "+name, `{"type":"object"}`, &mcp.ToolAnnotations{ReadOnlyHint: true})
	}
	b := apptest.Start(t, nil)
	_, source := createConnector(t, b, srv, nil)
	prefix := strings.ReplaceAll(source, ":", "_") + "."
	session := mcpSession(t, b, b.Sandbox())

	valid := regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)
	names := map[string]string{} // the server's tool → its MCP name
	listed, err := session.ListTools(context.Background(), &mcp.ListToolsParams{})
	require.NoError(t, err)
	for _, tl := range listed.Tools {
		if strings.HasPrefix(tl.Name, prefix) {
			require.Regexp(t, valid, tl.Name)
			names[strings.TrimPrefix(tl.Title, "notes: ")] = tl.Name
		}
	}
	require.Len(t, names, 2+len(odd), "every tool is listed: %v", names)
	require.Equal(t, prefix+"get_item", names["get_item"])
	require.Equal(t, prefix+"search", names["search"])

	for _, tool := range odd {
		res, err := session.CallTool(context.Background(), &mcp.CallToolParams{Name: names[tool], Arguments: map[string]any{}})
		require.NoError(t, err, tool)
		require.False(t, res.IsError, callText(t, res))
		require.Equal(t, tool+" done", callText(t, res))
	}
	require.Len(t, srv.toolCalls(), len(odd))
}
