package worker

import (
	"time"

	"github.com/riverqueue/river/rivertype"
	"github.com/sethvargo/go-retry"
)

// RetryPolicy is exponential backoff with ±20% jitter, capped at Max: the
// n-th retry waits about Base·2^(n-1).
type RetryPolicy struct {
	Base time.Duration
	Max  time.Duration
}

// NextRetry implements river.ClientRetryPolicy, for the jobs whose worker
// has no policy of its own (ExecuteWorker has, from its job's args).
func (p *RetryPolicy) NextRetry(job *rivertype.JobRow) time.Time {
	return time.Now().Add(backoff(p.Base, max(p.Base, p.Max), job.Attempt))
}

func (p *RetryPolicy) delay(attempt int) time.Duration { return backoff(p.Base, p.Max, attempt) }

func backoff(base, maxDelay time.Duration, attempt int) time.Duration {
	b := retry.WithCappedDuration(maxDelay, retry.WithJitterPercent(20, retry.NewExponential(base)))
	var d time.Duration
	for range min(max(attempt, 1), 30) {
		d, _ = b.Next()
	}
	return d
}
