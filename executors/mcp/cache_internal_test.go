package mcp

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

func TestClient_CacheBounded(t *testing.T) {
	t.Parallel()

	client, err := New(&Config{AllowPrivateNetworks: true})
	require.NoError(t, err)
	client.maxCacheBytes = 100
	list := func(n int) []Tool { return []Tool{{Name: "t", Description: strings.Repeat("d", n-1)}} }
	a, b := uuid.New(), uuid.New()

	// Lists are kept while they fit together.
	client.store(a, "k", list(60))
	_, ok := client.cached(a, "k")
	require.True(t, ok)
	client.store(b, "k", list(60))
	_, ok = client.cached(b, "k")
	require.False(t, ok, "no room: served, not kept")
	_, ok = client.cached(a, "k")
	require.True(t, ok, "what is kept stays")

	// Listed again, a connector's list replaces its own.
	client.store(a, "k", list(90))
	_, ok = client.cached(a, "k")
	require.True(t, ok)
	require.Equal(t, 90, client.cacheBytes)

	// Room is made by an invalidation, or by lists that expired.
	client.Invalidate(a)
	require.Zero(t, client.cacheBytes)
	client.store(b, "k", list(60))
	_, ok = client.cached(b, "k")
	require.True(t, ok)
	client.cache[b] = cacheEntry{key: "k", tools: list(60), size: 60} // expired
	client.store(a, "k", list(60))
	_, ok = client.cached(a, "k")
	require.True(t, ok)
	require.Equal(t, 60, client.cacheBytes)
}
