package worker

import (
	"cmp"
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/outboxd/outboxd/internal/domain/flow"
	"github.com/outboxd/outboxd/internal/domain/invocation"
)

// bucketScope is the scope key of a call of org to source in bucket; an
// unknown bucket is left to the limiter to report.
func (w *ExecuteWorker) bucketScope(bucket, org, source string) string {
	cfg, _ := w.deps.Flow.Bucket(bucket)
	return cfg.ScopeKey(org, source)
}

// buckets are the buckets a call of org to source whose invocation names
// bucket takes a token from: that one and, when an envelope named another
// (constraints.rate_bucket), its source's own, so that naming a generous
// bucket does not escape the provider's limit (slack.minute).
func (w *ExecuteWorker) buckets(ctx context.Context, bucket, org, source string) []string {
	if w.deps.Flow == nil || bucket == "" {
		return nil
	}
	if w.deps.Sources == nil {
		return []string{bucket}
	}
	src, err := w.deps.Sources.Source(ctx, org, source)
	if err != nil || src.Bucket == "" || src.Bucket == bucket || !w.deps.Flow.Accepts(src.Bucket) {
		return []string{bucket} // a source gone is the run's to report
	}
	return []string{bucket, src.Bucket}
}

// takeToken acquires the invocation's buckets. wait > 0 means no token (or
// no concurrency slot) now in one of them: the job snoozes that long,
// holding no worker and spending no attempt, and gives back what the
// others gave. release frees the concurrency slots after the call.
func (w *ExecuteWorker) takeToken(ctx context.Context, ref *invocation.BucketRef, jobID int64) (wait time.Duration, release func(), err error) {
	var taken []string
	var releases []func()
	release = func() {
		for _, r := range releases {
			r()
		}
	}
	for _, bucket := range w.buckets(ctx, ref.Name, ref.Org, ref.Source) {
		snooze, rel, takeErr := w.takeOne(ctx, bucket, ref, jobID)
		if takeErr != nil || snooze > 0 {
			for _, b := range taken {
				w.refundOne(ctx, b, ref.Org, ref.Source)
			}
			release()
			return snooze, nil, takeErr
		}
		taken, releases = append(taken, bucket), append(releases, rel)
	}
	return 0, release, nil
}

// takeOne acquires one bucket for the job (takeToken).
func (w *ExecuteWorker) takeOne(ctx context.Context, bucket string, ref *invocation.BucketRef, jobID int64) (wait time.Duration, release func(), err error) {
	// A global bucket's scope key is "": the limiter takes the job's
	// organization instead, to hold it to its share of the bucket's slots.
	key := cmp.Or(w.bucketScope(bucket, ref.Org, ref.Source), ref.Org)
	grant, err := w.deps.Flow.Acquire(ctx, bucket, key, "job:"+strconv.FormatInt(jobID, 10))
	if errors.Is(err, flow.ErrUnknownBucket) {
		// The bucket was removed from the configuration after this job was
		// enqueued: run unthrottled rather than never.
		w.logger.WarnContext(ctx, "unknown rate bucket; running without it", "bucket", bucket, "job_id", jobID)
		return 0, func() {}, nil
	}
	if err != nil {
		return 0, nil, err
	}
	if grant.Wait > 0 {
		w.deps.Metrics.BucketWaits.WithLabelValues(bucket).Inc()
		// Spread the jobs that were refused together over a little time so
		// they do not all come back at the same instant.
		return grant.Wait + rand.N(grant.Wait/10+20*time.Millisecond), nil, nil
	}
	return 0, func() {
		if grant.Lease != nil {
			if err := w.deps.Flow.Release(context.WithoutCancel(ctx), grant.Lease); err != nil {
				w.logger.WarnContext(ctx, "releasing concurrency lease", "error", err)
			}
		}
	}, nil
}

// refund gives back the tokens the invocation's job took from its buckets
// (takeToken) when no call is made. The job's concurrency slots are
// released after it as after a call.
func (w *ExecuteWorker) refund(ctx context.Context, inv invocation.Invocation) {
	for _, bucket := range w.buckets(ctx, deref(inv.RateBucket), inv.OrganizationID, inv.Integration) {
		w.refundOne(ctx, bucket, inv.OrganizationID, inv.Integration)
	}
}

func (w *ExecuteWorker) refundOne(ctx context.Context, bucket, org, source string) {
	err := w.deps.Flow.Refund(context.WithoutCancel(ctx), bucket, w.bucketScope(bucket, org, source))
	if err != nil && !errors.Is(err, flow.ErrUnknownBucket) {
		w.logger.WarnContext(ctx, "refunding rate bucket token", "bucket", bucket, "error", err)
	}
}

// drain empties the invocation's buckets (buckets: the named one and its
// source's own) for d after a provider 429, so the other jobs of the
// buckets wait too. A global bucket is every organization's: it is
// drained only for its own source's 429 (the plugins' for "plugin"),
// never for the 429 of another source whose envelope named it
// (constraints.rate_bucket), which would hold every organization's calls
// for one organization's provider limit.
func (w *ExecuteWorker) drain(ctx context.Context, inv invocation.Invocation, d time.Duration) {
	for _, bucket := range w.buckets(ctx, deref(inv.RateBucket), inv.OrganizationID, inv.Integration) {
		if cfg, ok := w.deps.Flow.Bucket(bucket); ok && cfg.Scope == flow.ScopeGlobal && !w.ownBucket(ctx, inv, bucket) {
			w.logger.InfoContext(ctx, "not draining a global rate bucket for another source's limit", "bucket", bucket,
				"source_id", inv.Integration, "organization_id", inv.OrganizationID)
			continue
		}
		err := w.deps.Flow.Drain(ctx, bucket, w.bucketScope(bucket, inv.OrganizationID, inv.Integration), d)
		switch {
		case err == nil:
			w.deps.Metrics.BucketDrains.WithLabelValues(bucket).Inc()
		case !errors.Is(err, flow.ErrUnknownBucket):
			w.logger.WarnContext(ctx, "draining rate bucket", "bucket", bucket, "error", err)
		}
	}
}

// ownBucket reports whether bucket is the one the invocation's source
// takes by default.
func (w *ExecuteWorker) ownBucket(ctx context.Context, inv invocation.Invocation, bucket string) bool {
	if w.deps.Sources == nil {
		return false
	}
	src, err := w.deps.Sources.Source(ctx, inv.OrganizationID, inv.Integration)
	return err == nil && src.Bucket == bucket
}
