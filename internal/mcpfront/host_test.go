package mcpfront_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/mcpfront"
)

// Behind a reverse proxy on the same machine that keeps the client's Host
// (outboxd listening on 127.0.0.1, its default), /mcp answers as the REST
// routes do: the SDK's DNS rebinding guard, which refused every such
// request with 403, has nothing to guard where each request carries a
// verified bearer token.
func TestServeMCP_BehindAProxyKeepingTheHost(t *testing.T) {
	front := mcpfront.New(&mcpfront.Deps{Outbox: noOutbox{}, Catalog: fakeCatalog{n: 1}})
	claims := &auth.Claims{Org: "org", Kind: auth.KindSandbox, SessionID: "s"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		front.ServeMCP(w, r, claims, "https://"+r.Host)
	}))
	t.Cleanup(srv.Close)
	for version, body := range map[string]string{
		"2025-11-25": `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`,
		"2026-07-28": `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`,
	} {
		req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		require.NoError(t, err)
		req.Host = "outboxd.example.com"
		req.Header.Set("Authorization", "Bearer verified-upstream")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if version == "2026-07-28" {
			req.Header.Set("Mcp-Protocol-Version", version)
			req.Header.Set("Mcp-Method", "tools/list")
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", version, raw)
		require.Contains(t, string(raw), `"result"`, version)
	}
}
