package app

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/mcpfront"
	"github.com/outboxd/outboxd/internal/platform/httpserver"
)

// TestMCPConfig_SessionsFitTheOrganizationsShare: unset, the session limit
// is half of an organization's requests in progress (at most 1000), so
// its sessions' open streams leave the other half for calls; set, it is
// kept, with a warning at start when it leaves no room for calls.
func TestMCPConfig_SessionsFitTheOrganizationsShare(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		http     httpserver.Config
		mcp      mcpfront.Config
		sessions int
		warns    bool
	}{
		{"derived", httpserver.Config{MaxConns: 512}, mcpfront.Config{}, 192, false},
		{"derived from the org share", httpserver.Config{MaxConns: 512, MaxOrgRequests: 10}, mcpfront.Config{}, 5, false},
		{"derived at most 1000", httpserver.Config{MaxConns: 10000}, mcpfront.Config{}, 1000, false},
		{"derived at least 1", httpserver.Config{MaxConns: 16, MaxOrgRequests: 1}, mcpfront.Config{}, 1, false},
		{"set below the share", httpserver.Config{MaxConns: 512}, mcpfront.Config{MaxSessions: 300}, 300, false},
		{"set at the share", httpserver.Config{MaxConns: 512}, mcpfront.Config{MaxSessions: 384}, 384, true},
		{"set above, stateless", httpserver.Config{MaxConns: 512}, mcpfront.Config{MaxSessions: 1000, Stateless: true}, 1000, false},
	} {
		var logs bytes.Buffer
		got := mcpConfig(&Config{HTTP: c.http, MCP: c.mcp}, slog.New(slog.NewTextHandler(&logs, nil)))
		require.Equal(t, c.sessions, got.MaxSessions, c.name)
		if c.warns {
			require.Contains(t, logs.String(), "mcp.max_sessions is not below http.max_org_requests", c.name)
			require.Contains(t, logs.String(), "max_org_requests=384", c.name)
		} else {
			require.Empty(t, logs.String(), c.name)
		}
	}
}
