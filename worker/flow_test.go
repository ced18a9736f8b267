package worker_test

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/invocation"
)

// metric reads a sample of /metrics, 0 when it is not there.
func metric(t *testing.T, b *apptest.Bundle, sample string) float64 {
	t.Helper()
	r := b.Do("GET", "/metrics", "", nil)
	require.Equal(t, http.StatusOK, r.Status)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(sample) + ` (\S+)$`).FindStringSubmatch(string(r.Raw))
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	return v
}

// A provider's 429 drains the bucket and the jobs it then delays are
// counted, by bucket: ops see a bucket holding jobs back.
func TestExecute_BucketDrainsAndWaitsAreCounted(t *testing.T) {
	t.Parallel()
	var limited atomic.Bool
	limited.Store(true)
	b := apptest.Start(t, &apptest.Options{
		SlackFunc: func(w http.ResponseWriter, r *http.Request) {
			if limited.CompareAndSwap(true, false) {
				w.Header().Set("Retry-After", "2")
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			apptest.SlackOK(w, r)
		},
	})
	allowSlack(b)
	first := enqueue(t, b, "count-drain-1")
	// The drain is recorded before the invocation notes the 429.
	require.Eventually(t, func() bool {
		e, _ := b.Invocation(first)["error"].(string)
		return strings.Contains(e, "ratelimited")
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, 1.0, metric(t, b, `outboxd_rate_bucket_drains_total{bucket="slack.minute"}`))

	// The next job of the bucket waits for the drain to end.
	second := enqueue(t, b, "count-drain-2")
	b.WaitStatus(second, invocation.StatusCompleted, 15*time.Second)
	b.WaitStatus(first, invocation.StatusCompleted, 15*time.Second)
	require.GreaterOrEqual(t, metric(t, b, `outboxd_rate_bucket_waits_total{bucket="slack.minute"}`), 1.0)
	require.Equal(t, 1.0, metric(t, b, `outboxd_rate_bucket_drains_total{bucket="slack.minute"}`))
}
