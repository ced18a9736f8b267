package migrations

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStatus_Current(t *testing.T) {
	t.Parallel()
	require.True(t, (&Status{RiverCurrent: 6, RiverLatest: 6}).Current())
	require.True(t, (&Status{RiverCurrent: 7, RiverLatest: 6}).Current(), "a newer release migrated River further")
	require.False(t, (&Status{RiverCurrent: 5, RiverLatest: 6}).Current())
	require.False(t, (&Status{RiverCurrent: 6, RiverLatest: 6, Pending: []Migration{{Version: 7}}}).Current())
}
