package mcp_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/mcp"
)

func TestCheckURL(t *testing.T) {
	t.Parallel()

	t.Run("Allowed", func(t *testing.T) {
		t.Parallel()

		for _, raw := range []string{
			"https://mcp.example.com/mcp",
			"http://mcp.example.com:8080/v1/mcp?team=a",
			"HTTPS://MCP.EXAMPLE.COM/",
			"http://93.184.216.34/mcp",
			"https://[2606:4700:4700::1111]/mcp",
			// Names are resolved and checked at dial time.
			"http://localhost:3000/mcp",
			"http://metadata.google.internal/",
		} {
			require.NoError(t, mcp.CheckURL(raw, false), raw)
			require.NoError(t, mcp.CheckURL(raw, true), raw)
		}
	})

	t.Run("PrivateAddresses", func(t *testing.T) {
		t.Parallel()

		for _, raw := range []string{
			"http://127.0.0.1:8080/mcp",
			"http://127.1.2.3/",
			"http://10.0.0.1/",
			"http://10.255.1.2/",
			"http://172.16.0.1/",
			"http://192.168.1.10/",
			"http://169.254.169.254/latest/meta-data/",
			"http://169.254.1.1/",
			"http://0.0.0.0:8080/",
			"http://100.100.100.200/",
			"http://224.0.0.1/",
			"http://255.255.255.255/",
			"http://[::1]:8080/mcp",
			"http://[::]/",
			"http://[fd00:ec2::254]/latest/meta-data/",
			"http://[fc00::1]/",
			"http://[fe80::1%25eth0]/",
			"http://[ff02::1]/",
			"http://[::ffff:127.0.0.1]/",
			"http://[::ffff:169.254.169.254]/",
			"http://[64:ff9b::a00:1]/",
			"http://[2002:a00:1::]/",
		} {
			err := mcp.CheckURL(raw, false)
			require.Error(t, err, raw)
			require.NoError(t, mcp.CheckURL(raw, true), raw)
		}
	})

	t.Run("EmbeddedPublicAddresses", func(t *testing.T) {
		t.Parallel()

		for _, raw := range []string{
			"http://[::ffff:93.184.216.34]/",
			"http://[64:ff9b::5db8:d822]/",
		} {
			require.NoError(t, mcp.CheckURL(raw, false), raw)
		}
	})

	t.Run("NeverAllowed", func(t *testing.T) {
		t.Parallel()

		for _, raw := range []string{
			"file:///etc/passwd",
			"ftp://example.com/mcp",
			"gopher://example.com/",
			"ws://example.com/mcp",
			"example.com/mcp",
			"//example.com/mcp",
			"https://",
			"https:///mcp",
			"http:example.com",
			"https://user:password@example.com/mcp",
			"https://token@example.com/mcp",
			"://bad",
			"http://exa mple.com/",
			"",
		} {
			require.Error(t, mcp.CheckURL(raw, false), raw)
			require.Error(t, mcp.CheckURL(raw, true), raw)
		}
	})
}

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
