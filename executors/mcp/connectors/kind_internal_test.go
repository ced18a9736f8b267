package connectors

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors/mcp"
	"github.com/outboxd/outboxd/executors/mcp/mcpstore"
)

// TestCredentialOnlyOutboxdHolds: a connector's secret is marked as a
// credential only outboxd holds, which the worker then reads from the
// store even with a broker.
func TestCredentialOnlyOutboxdHolds(t *testing.T) {
	t.Parallel()

	client, err := mcp.New(&mcp.Config{})
	require.NoError(t, err)
	s := New(&Deps{Client: client})
	src, err := s.source(&mcpstore.Row{
		ID: uuid.New(), Name: "notes", Url: "https://mcp.example.com/mcp", AuthType: "bearer",
		RiskPolicy: []byte(`{}`), ToolRiskOverrides: []byte(`{}`),
	}, nil)
	require.NoError(t, err)
	entry := src.entry()
	require.True(t, entry.NeedsCredential)
	require.True(t, entry.LocalCredential)
	require.True(t, entry.OrgRegistered)
	require.Equal(t, "notes", entry.Name)
}
