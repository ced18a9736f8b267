package worker

import (
	"cmp"
	"encoding/json"
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

// NextRetry implements river.ClientRetryPolicy. An execute job carrying its
// own retry policy (from its source or envelope) uses those bounds.
func (p *RetryPolicy) NextRetry(job *rivertype.JobRow) time.Time {
	base, maxDelay := p.Base, p.Max
	if job.Kind == (ExecuteArgs{}).Kind() {
		var args ExecuteArgs
		if err := json.Unmarshal(job.EncodedArgs, &args); err == nil && args.Retry != nil {
			base, maxDelay = cmp.Or(args.Retry.BaseDelay, base), cmp.Or(args.Retry.MaxDelay, maxDelay)
		}
	}
	return time.Now().Add(backoff(base, max(base, maxDelay), job.Attempt))
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
