package worker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRetryPolicy_ExponentialWithJitterAndCap(t *testing.T) {
	t.Parallel()
	p := &RetryPolicy{Base: time.Second, Max: time.Minute}
	for attempt := 1; attempt <= 6; attempt++ {
		want := time.Second << (attempt - 1)
		for range 20 {
			d := p.delay(attempt)
			require.GreaterOrEqual(t, d, want*8/10, "attempt %d", attempt)
			require.LessOrEqual(t, d, want*12/10, "attempt %d", attempt)
		}
	}
	for range 20 {
		require.LessOrEqual(t, p.delay(25), time.Minute)
		require.Greater(t, p.delay(25), 30*time.Second)
	}
}
