package mcp_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/mcp"
)

func TestCheckConnector(t *testing.T) {
	t.Parallel()

	valid := func() *mcp.Connector {
		return &mcp.Connector{
			URL:  "https://mcp.example.com/mcp",
			Auth: mcp.Auth{Type: mcp.AuthCustomHeader, HeaderName: "X-Api-Key"},
			RiskPolicy: mcp.RiskPolicy{
				Default: "read",
				Tools:   map[string]executors.Tier{"delete": executors.TierR4, "drop": "danger"},
			},
		}
	}

	require.NoError(t, mcp.CheckConnector(valid(), false))
	for _, auth := range []mcp.Auth{{}, {Type: mcp.AuthNone}, {Type: mcp.AuthBearer}} {
		conn := valid()
		conn.Auth = auth
		require.NoError(t, mcp.CheckConnector(conn, false), auth)
	}

	for name, mutate := range map[string]func(*mcp.Connector){
		"PrivateURL":            func(c *mcp.Connector) { c.URL = "http://10.0.0.1/mcp" },
		"BadScheme":             func(c *mcp.Connector) { c.URL = "file:///etc/passwd" },
		"UnknownAuthType":       func(c *mcp.Connector) { c.Auth.Type = "oauth" },
		"EmptyHeaderName":       func(c *mcp.Connector) { c.Auth.HeaderName = "" },
		"HeaderNameWithSpace":   func(c *mcp.Connector) { c.Auth.HeaderName = "X Api Key" },
		"HeaderNameWithColon":   func(c *mcp.Connector) { c.Auth.HeaderName = "X-Api-Key:" },
		"HeaderNameWithNewline": func(c *mcp.Connector) { c.Auth.HeaderName = "X-Api-Key\r\nX-Other" },
		"ReservedHeaderName":    func(c *mcp.Connector) { c.Auth.HeaderName = "mcp-session-id" },
		"ContentTypeHeaderName": func(c *mcp.Connector) { c.Auth.HeaderName = "Content-Type" },
		"HeaderNameWithBearer":  func(c *mcp.Connector) { c.Auth.Type = mcp.AuthBearer },
		"BadDefaultRisk":        func(c *mcp.Connector) { c.RiskPolicy.Default = "critical" },
		"BadDefaultTier":        func(c *mcp.Connector) { c.RiskPolicy.Default = "R5" },
		"BadToolRisk":           func(c *mcp.Connector) { c.RiskPolicy.Tools["delete"] = "" },
	} {
		conn := valid()
		mutate(conn)
		require.Error(t, mcp.CheckConnector(conn, false), name)
	}

	conn := valid()
	conn.URL = "http://10.0.0.1/mcp"
	require.NoError(t, mcp.CheckConnector(conn, true))
}
