package app

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/sealed/sealedstore"
)

// TestSealedGroups_EveryColumn: the start's check of the stored secrets'
// keys reads every column of sealed values a rotation re-seals, so a
// column added there is not left out of the warning.
func TestSealedGroups_EveryColumn(t *testing.T) {
	t.Parallel()
	for _, c := range sealedstore.Columns {
		require.Contains(t, sealedGroupsSQL, "'"+c.Name+"'", "add %s to sealedGroupsSQL", c.Name)
	}
}
