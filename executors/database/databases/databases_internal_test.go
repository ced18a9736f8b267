package databases

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors/database"
	"github.com/outboxd/outboxd/executors/database/databasestore"
)

// TestCredentialOnlyOutboxdHolds: a database's URL is marked as a
// credential only outboxd holds, which the worker then reads from the
// store even with a broker.
func TestCredentialOnlyOutboxdHolds(t *testing.T) {
	t.Parallel()

	client := database.New(&database.Config{})
	t.Cleanup(client.Close)
	s := New(nil, client, nil, nil, 0)
	db := s.source(&databasestore.Row{ID: uuid.New(), Name: "warehouse", MaxRows: 10, StatementTimeoutMs: 1000})
	require.True(t, db.NeedsCredential)
	require.True(t, db.LocalCredential)
	require.True(t, db.OrgRegistered)
}
