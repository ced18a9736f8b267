package api_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
)

// The guide of a connector whose server cannot be reached is unavailable,
// as GET …/actions/guide/<source> says (503), not a resource that does
// not exist: a model told "not found" gives up on a source that is only
// down for now.
func TestMCP_GuideOfAnUnreachableConnectorIsUnavailable(t *testing.T) {
	t.Parallel()
	srv := newMCPServer(t)
	b := apptest.Start(t, &apptest.Options{ConnectorCacheTTL: time.Millisecond})
	_, source := createConnector(t, b, srv, nil)
	srv.Close()
	time.Sleep(10 * time.Millisecond) // past the tool list's cache

	rest := b.Do("GET", "/v1/sessions/"+apptest.Session+"/actions/guide/"+source, b.Sandbox(), nil)
	require.Equal(t, http.StatusServiceUnavailable, rest.Status, string(rest.Raw))
	_, err := mcpSession(t, b, b.Sandbox()).ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "outboxd://guides/" + source})
	var rpcErr *jsonrpc.Error
	require.True(t, errors.As(err, &rpcErr), "%v", err)
	require.Equal(t, int64(jsonrpc.CodeInternalError), rpcErr.Code, rpcErr.Message)
	require.Contains(t, rpcErr.Message, "source unavailable")

	// A source the caller does not have is still not found.
	_, err = mcpSession(t, b, b.Sandbox()).ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "outboxd://guides/connector:00000000-0000-0000-0000-000000000000"})
	require.True(t, errors.As(err, &rpcErr), "%v", err)
	require.Equal(t, int64(jsonrpc.CodeInvalidParams), rpcErr.Code, rpcErr.Message)
}
