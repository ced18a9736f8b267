package invocation

import (
	"context"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// RelayBatch is how many events a relay (webhooks, Slack approvals) reads
// from the feed per transaction.
const RelayBatch = 500

// RelayInsertOpts are the insert options of a relay job on queue ("" for
// River's default): at most one of its kind waits or runs at a time.
func RelayInsertOpts(queue string) river.InsertOpts {
	return river.InsertOpts{Queue: queue, MaxAttempts: 1, UniqueOpts: river.UniqueOpts{ByState: []rivertype.JobState{
		rivertype.JobStateAvailable, rivertype.JobStatePending, rivertype.JobStateRunning,
		rivertype.JobStateRetryable, rivertype.JobStateScheduled,
	}}}
}

// CatchUp runs relay, one batch of events a call, until a batch comes back
// short (the relay has reached the horizon) or 20 batches are done; the
// next run goes on from there.
func CatchUp(ctx context.Context, relay func(context.Context) (int, error)) error {
	for range 20 {
		n, err := relay(ctx)
		if err != nil || n < RelayBatch {
			return err
		}
	}
	return nil
}
