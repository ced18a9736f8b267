package mcpfront_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/mcpfront"
)

// Tool names are valid MCP names (letters, digits, "_", "-", ".", at most
// 128), whatever the source id or the connector's tool is called.
func TestToolName_IsAValidMCPName(t *testing.T) {
	valid := regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)
	for _, c := range []struct{ source, action, want string }{
		{"slack", "send_message", "slack.send_message"},
		{"connector:3f2a9c1e-0000-4000-8000-000000000001", "create note!", "connector_3f2a9c1e-0000-4000-8000-000000000001.create_note_"},
		{"plugin", "déployer", "plugin.d_ployer"},
	} {
		got := mcpfront.ToolName(c.source, c.action)
		require.Equal(t, c.want, got)
		require.Regexp(t, valid, got)
	}
	long := mcpfront.ToolName("database:x", strings.Repeat("a", 300))
	require.Len(t, long, 128)
	require.Regexp(t, valid, long)
}
