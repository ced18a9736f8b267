package catalog_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/database"
	"github.com/outboxd/outboxd/executors/mcp"
	"github.com/outboxd/outboxd/internal/domain/catalog"
	"github.com/outboxd/outboxd/internal/domain/flow"
	"github.com/outboxd/outboxd/internal/platform/dbsqlc"
)

// TestNew_ProvidersAsRegistered: the catalog hands out each provider with
// what its registration says (display name, guide, credential need,
// bucket), and a source added to the registry without one with the
// conservative defaults.
func TestNew_ProvidersAsRegistered(t *testing.T) {
	t.Parallel()

	provider := func(id string, noCredential bool) executors.Provider {
		return executors.Provider{
			ID: id, Name: "Name of " + id, Guide: "Guide of " + id, NoCredential: noCredential,
			Bucket: flow.BucketConfig{Name: id + ".api"},
			Actions: []executors.Action{executors.NewAction(executors.Definition{ID: "noop", Tier: executors.TierR0},
				func(struct{}, context.Context, *struct{}, executors.ExecContext) (executors.Result, error) {
					return executors.Result{Data: json.RawMessage(`{}`)}, nil
				})},
			Connect: func(*executors.ProviderConfig) (any, error) { return struct{}{}, nil },
		}
	}
	registry, err := executors.Build([]executors.Provider{provider("keyed", false), provider("open", true)}, nil)
	require.NoError(t, err)
	plain, err := provider("plain", true).New(nil)
	require.NoError(t, err)
	registry.Add(plain, "")

	c := catalog.New(registry, nil, nil, nil)
	ctx := context.Background()

	keyed, err := c.Source(ctx, "org", "keyed")
	require.NoError(t, err)
	require.Equal(t, "Name of keyed", keyed.Name)
	require.Equal(t, "Guide of keyed", keyed.Guide)
	require.True(t, keyed.NeedsCredential)
	require.Equal(t, "keyed.api", keyed.Bucket)
	require.False(t, keyed.OrgRegistered)

	open, err := c.Source(ctx, "org", "open")
	require.NoError(t, err)
	require.False(t, open.NeedsCredential, "NoCredential: the worker resolves no token")

	unregistered, err := c.Source(ctx, "org", "plain")
	require.NoError(t, err)
	require.True(t, unregistered.NeedsCredential, "a source without a registration needs a credential")
	require.Empty(t, unregistered.Name)
	require.Empty(t, unregistered.Bucket)

	_, err = c.Source(ctx, "org", "missing")
	require.ErrorIs(t, err, catalog.ErrNotFound)
}

// TestCredentialsOnlyOutboxdHolds: a connector's secret and a database's
// URL are marked as credentials only outboxd holds, which the worker then
// reads from the store even with a broker; a provider's token is not.
func TestCredentialsOnlyOutboxdHolds(t *testing.T) {
	t.Parallel()

	registry, err := executors.Build(nil, nil)
	require.NoError(t, err)
	databases := database.New(&database.Config{})
	t.Cleanup(databases.Close)
	mcpClient, err := mcp.New(&mcp.Config{})
	require.NoError(t, err)
	c := catalog.New(registry, nil, mcpClient, nil).WithDatabases(databases)

	db := c.DatabaseSource(dbsqlc.OrgDatabase{ID: uuid.New(), Name: "warehouse", MaxRows: 10, StatementTimeoutMs: 1000})
	require.True(t, db.NeedsCredential)
	require.True(t, db.LocalCredential)

	conn, err := c.ConnectorSource(dbsqlc.OrgConnector{
		ID: uuid.New(), Name: "notes", Url: "https://mcp.example.com/mcp", AuthType: "bearer",
		RiskPolicy: []byte(`{}`), ToolRiskOverrides: []byte(`{}`),
	})
	require.NoError(t, err)
	entry := conn.Entry()
	require.True(t, entry.NeedsCredential)
	require.True(t, entry.LocalCredential)
}
