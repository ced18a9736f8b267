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
	"github.com/outboxd/outboxd/internal/domain/auth"
)

// outboxd_wait with a service token reads only its automation's envelopes,
// as GET /v1/envelopes/{id} does: another automation's result is not found.
func TestMCP_WaitAgainReadsOnlyItsAutomationsEnvelopes(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-mcp-own-envelopes")
	b.SetModes(map[string]string{"slack:send_message": "allow"})
	ctx := context.Background()

	res, err := mcpSession(t, b, b.Service()).CallTool(ctx, &mcp.CallToolParams{Name: "slack.send_message", Arguments: message})
	require.NoError(t, err)
	require.False(t, res.IsError, callText(t, res))
	list := b.Do("GET", "/v1/invocations?origin=envelope", b.Owner(), nil)
	require.Equal(t, http.StatusOK, list.Status, string(list.Raw))
	invs := list.Body["invocations"].([]any)
	require.Len(t, invs, 1)
	id := invs[0].(map[string]any)["id"].(string)
	wait := &mcp.CallToolParams{Name: "outboxd_wait", Arguments: map[string]any{"invocation_id": id}}

	own, err := mcpSession(t, b, b.Service()).CallTool(ctx, wait)
	require.NoError(t, err)
	require.Equal(t, true, own.StructuredContent.(map[string]any)["ok"], "its own automation's envelope")

	for name, token := range map[string]string{
		"another automation": b.Token(auth.Claims{Kind: auth.KindService, AutomationID: "automation-2"}),
		"no automation":      b.Token(auth.Claims{Kind: auth.KindService}),
	} {
		require.Equal(t, http.StatusNotFound, b.Do("GET", "/v1/envelopes/"+id, token, nil).Status, name)
		res, err := mcpSession(t, b, token).CallTool(ctx, wait)
		var rpcErr *jsonrpc.Error
		require.True(t, errors.As(err, &rpcErr), "%s: %v %+v", name, err, res)
		require.Equal(t, int64(jsonrpc.CodeInvalidParams), rpcErr.Code, name)
		require.Contains(t, rpcErr.Message, "not found", name)
	}
}
