package mcpfront

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// The idempotency key comes from _meta, else from the Idempotency-Key
// header; a bad one is refused.
func TestIdempotencyKey(t *testing.T) {
	key, err := idempotencyKey(mcp.Meta{idempotencyMeta: "from-meta"}, "from-header")
	require.NoError(t, err)
	require.Equal(t, "from-meta", key)
	key, err = idempotencyKey(nil, "from-header")
	require.NoError(t, err)
	require.Equal(t, "from-header", key)
	key, err = idempotencyKey(nil, "")
	require.NoError(t, err)
	require.Empty(t, key)
	for _, bad := range []any{7, "", string(make([]byte, 256))} {
		_, err = idempotencyKey(mcp.Meta{idempotencyMeta: bad}, "")
		require.Error(t, err, "%v", bad)
	}
}
