package admin

import (
	"context"
	"fmt"
	"time"

	"github.com/outboxd/outboxd/internal/domain/admin/adminstore"
	"github.com/outboxd/outboxd/internal/domain/flow"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/retention"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
)

// StatsWindow is the period Stats reports throughput and failures over,
// and StatsBucket the width of each of its windows.
const (
	StatsWindow = time.Hour
	StatsBucket = 5 * time.Minute
)

// Stats is the operations page's summary of one organization: its queue
// (OrgQueue) and its recent outcomes. Nothing in it counts another
// organization's work.
type Stats struct {
	GeneratedAt time.Time
	Queue       *OrgQueue
	// InFlight counts the organization's invocations that have not ended
	// (pending, approved, executing), with the oldest one's creation.
	InFlight map[string]InFlightStats
	LastHour OutcomeStats
	// Retention is, for each table retention deletes from, how long it
	// keeps the organization's finished rows and what it deleted of them.
	Retention []RetentionStats
}

// RetentionStats is retention's work on one table of the organization.
type RetentionStats struct {
	Table string
	// Keep is how long finished rows are kept; 0 forever.
	Keep time.Duration
	// LastRunAt is the last run that deleted any of the organization's
	// rows in the table, and LastDeleted how many; nil and 0 before one.
	LastRunAt    *time.Time
	LastDeleted  int64
	DeletedTotal int64
}

// InFlightStats counts the invocations in one unfinished status.
type InFlightStats struct {
	Count    int64
	OldestAt time.Time
}

// OutcomeStats is what ended in the last StatsWindow.
type OutcomeStats struct {
	Since         time.Time
	WindowSeconds int
	Ended         map[string]int64
	// ThroughputPerMinute is the completed and failed invocations per
	// minute over the window.
	ThroughputPerMinute float64
	// FailureRate is failed / (completed + failed), null when neither.
	FailureRate *float64
	// Buckets are StatsBucket-wide windows, oldest first, with the
	// outcomes that ended in each.
	Buckets []OutcomeBucket
}

// OutcomeBucket is one window of OutcomeStats.
type OutcomeBucket struct {
	Start     time.Time
	Completed int64
	Failed    int64
	Other     int64
}

// Stats summarizes the organization's queue and recent outcomes, read
// from the database now, so every API process answers alike.
func (s *Service) Stats(ctx context.Context, org string) (*Stats, error) {
	ctx = dbutil.WithOrg(ctx, org)
	now := time.Now().UTC()
	queue, err := s.Queue(ctx, org)
	if err != nil {
		return nil, err
	}
	out := &Stats{GeneratedAt: now, Queue: queue, InFlight: map[string]InFlightStats{}}
	flight, err := s.own.InFlight(ctx, org)
	if err != nil {
		return nil, fmt.Errorf("counting invocations in flight: %w", err)
	}
	for _, f := range flight {
		out.InFlight[f.Status] = InFlightStats{Count: f.N, OldestAt: f.Oldest}
	}

	since := now.Add(-StatsWindow).Truncate(StatsBucket)
	ended, err := s.own.OutcomesSince(ctx, org, since, StatsBucket)
	if err != nil {
		return nil, fmt.Errorf("counting outcomes: %w", err)
	}
	out.LastHour = outcomes(since, now, ended)
	if out.Retention, err = s.retention(ctx, org); err != nil {
		return nil, err
	}
	return out, nil
}

// retention lists the tables of Deps.Retention with what retention
// deleted of org in each.
func (s *Service) retention(ctx context.Context, org string) ([]RetentionStats, error) {
	if s.deps.Retention == nil {
		return nil, nil
	}
	runs, err := retention.OrgRuns(ctx, s.deps.Pool, org)
	if err != nil {
		return nil, err
	}
	out := []RetentionStats{}
	for _, table := range retention.Tables {
		keep, ok := s.deps.Retention[table]
		if !ok {
			continue
		}
		st := RetentionStats{Table: table, Keep: keep}
		for _, r := range runs {
			if r.Table == table {
				st.LastRunAt, st.LastDeleted, st.DeletedTotal = &r.LastRunAt, r.LastDeleted, r.DeletedTotal
			}
		}
		out = append(out, st)
	}
	return out, nil
}

// outcomes folds the per-window counts into OutcomeStats.
func outcomes(since, now time.Time, rows []adminstore.Outcome) OutcomeStats {
	o := OutcomeStats{Since: since, WindowSeconds: int(now.Sub(since).Seconds()), Ended: map[string]int64{}}
	index := map[int64]int{}
	for t := since; !t.After(now); t = t.Add(StatsBucket) {
		index[t.Unix()] = len(o.Buckets)
		o.Buckets = append(o.Buckets, OutcomeBucket{Start: t})
	}
	for _, r := range rows {
		o.Ended[r.Status] += r.N
		i, ok := index[r.WindowStart.Unix()]
		if !ok {
			continue
		}
		switch invocation.Status(r.Status) {
		case invocation.StatusCompleted:
			o.Buckets[i].Completed += r.N
		case invocation.StatusFailed:
			o.Buckets[i].Failed += r.N
		default:
			o.Buckets[i].Other += r.N
		}
	}
	done, failed := o.Ended[string(invocation.StatusCompleted)], o.Ended[string(invocation.StatusFailed)]
	if minutes := now.Sub(since).Minutes(); minutes > 0 {
		o.ThroughputPerMinute = float64(done+failed) / minutes
	}
	if done+failed > 0 {
		rate := float64(failed) / float64(done+failed)
		o.FailureRate = &rate
	}
	return o
}

// RateBucket is a configured rate bucket with the state of the rows an
// organization's calls use.
type RateBucket struct {
	Name            string
	Scope           string
	Rate            int
	IntervalSeconds float64
	Burst           int
	MaxConcurrency  int
	// States has one entry per row: one for a global or org bucket, one
	// per source that used a per-source bucket. A bucket never used yet
	// has one full entry.
	States []RateBucketState
}

// RateBucketState is the level of one bucket row now.
type RateBucketState struct {
	Source       string
	Tokens       float64
	BlockedUntil *time.Time
	Leases       int
}

// RateBuckets lists the configured buckets with their current fill and
// leases as org's calls see them. Without flow control the list is empty.
func (s *Service) RateBuckets(ctx context.Context, org string) ([]RateBucket, error) {
	ctx = dbutil.WithOrg(ctx, org)
	out := []RateBucket{}
	if s.deps.Flow == nil {
		return out, nil
	}
	states, err := s.deps.Flow.States(ctx, org)
	if err != nil {
		return nil, err
	}
	byBucket := map[string][]RateBucketState{}
	for _, st := range states {
		byBucket[st.Bucket] = append(byBucket[st.Bucket], RateBucketState{
			Source: st.Source, Tokens: st.Tokens, BlockedUntil: st.BlockedUntil, Leases: st.Leases,
		})
	}
	for _, b := range s.deps.Flow.Buckets() {
		rb := RateBucket{
			Name: b.Name, Scope: string(b.Scope), Rate: b.Rate, IntervalSeconds: b.Interval.Seconds(),
			Burst: b.Burst, MaxConcurrency: b.MaxConcurrency, States: byBucket[b.Name],
		}
		if len(rb.States) == 0 && b.Scope != flow.ScopeSource {
			rb.States = []RateBucketState{{Tokens: float64(b.Burst)}}
		}
		if rb.States == nil {
			rb.States = []RateBucketState{}
		}
		out = append(out, rb)
	}
	return out, nil
}
