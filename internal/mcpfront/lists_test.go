package mcpfront_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/catalog"
	"github.com/outboxd/outboxd/internal/mcpfront"
)

// unnamedCatalog is fakeCatalog whose source has no display name, as the
// demo source has none.
type unnamedCatalog struct{ fakeCatalog }

func (u unnamedCatalog) Available(ctx context.Context, c *catalog.Caller) (*catalog.Listing, error) {
	l, err := u.fakeCatalog.Available(ctx, c)
	l.Sources[0].Name = ""
	return l, err
}

// The lists and guides a caller reads are its own: they say so
// (cacheScope "private", a value the protocol has, where an empty one
// was sent), and a source without a display name is named by its id.
func TestListsAndGuides_AreTheCallersOwn(t *testing.T) {
	session := connect(t, &mcpfront.Deps{Outbox: noOutbox{}, Catalog: unnamedCatalog{fakeCatalog{n: 1}}})
	tools, err := session.ListTools(context.Background(), nil)
	require.NoError(t, err)
	require.Equal(t, "private", tools.CacheScope)
	resources, err := session.ListResources(context.Background(), nil)
	require.NoError(t, err)
	require.Equal(t, "private", resources.CacheScope)
	require.Len(t, resources.Resources, 2)
	require.Equal(t, "Guide: demo", resources.Resources[1].Title)
	require.Contains(t, resources.Resources[1].Description, "Every action of demo with")
	guide, err := session.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "outboxd://guide"})
	require.NoError(t, err)
	require.Equal(t, "private", guide.CacheScope)
}
