package worker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRiverConfig_JobRetention: the job retention settings reach River's
// configuration, River's defaults when unset, -1 (keep forever) as it is.
func TestRiverConfig_JobRetention(t *testing.T) {
	t.Parallel()

	rc, err := riverConfig(&Deps{}, &Config{}, true)
	require.NoError(t, err)
	require.Equal(t, 24*time.Hour, rc.CompletedJobRetentionPeriod)
	require.Equal(t, 24*time.Hour, rc.CancelledJobRetentionPeriod)
	require.Equal(t, 7*24*time.Hour, rc.DiscardedJobRetentionPeriod)

	rc, err = riverConfig(&Deps{}, &Config{
		CompletedJobRetention: time.Hour, CancelledJobRetention: 2 * time.Hour, DiscardedJobRetention: -1,
	}, false)
	require.NoError(t, err)
	require.Equal(t, time.Hour, rc.CompletedJobRetentionPeriod)
	require.Equal(t, 2*time.Hour, rc.CancelledJobRetentionPeriod)
	require.Equal(t, time.Duration(-1), rc.DiscardedJobRetentionPeriod)
}
