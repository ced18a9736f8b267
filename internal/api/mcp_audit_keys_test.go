package api_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
)

// A service token's idempotency key is its envelope's external id: one
// the envelope refuses (only blanks) is refused as the key it is,
// "_meta.idempotency_key", not as an argument the call does not have
// ("arguments.external_id"), and nothing is stored. The same key of a
// sandbox token is its session's, as over REST.
func TestMCP_ServiceTokensBlankKeyIsNamedAsTheKey(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-mcp-blank-key")
	b.SetModes(map[string]string{"slack:send_message": "allow"})

	_, err := mcpSession(t, b, b.Service()).CallTool(context.Background(), &mcp.CallToolParams{
		Name: "slack.send_message", Arguments: message, Meta: mcp.Meta{"idempotency_key": "   "}})
	var rpcErr *jsonrpc.Error
	require.True(t, errors.As(err, &rpcErr), "%v", err)
	require.Equal(t, int64(jsonrpc.CodeInvalidParams), rpcErr.Code)
	require.Contains(t, rpcErr.Message, "_meta.idempotency_key")
	require.NotContains(t, rpcErr.Message, "arguments.")

	list := b.Do("GET", "/v1/invocations", b.Owner(), nil)
	require.Equal(t, http.StatusOK, list.Status)
	require.Empty(t, list.Body["invocations"], "nothing is stored")
	require.Empty(t, b.Slack.Requests())
}
