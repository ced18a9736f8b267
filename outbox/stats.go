package outbox

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/outboxd/outboxd/internal/dbsqlc"
	"github.com/outboxd/outboxd/internal/flow"
	"github.com/outboxd/outboxd/internal/invocation"
	"github.com/outboxd/outboxd/internal/telemetry"
)

// StatsWindow is the period Stats reports throughput and failures over,
// and StatsBucket the width of each of its windows.
const (
	StatsWindow = time.Hour
	StatsBucket = 5 * time.Minute
)

// Stats is the operations page's summary: River's queues (shared by every
// organization) and the organization's invocations.
type Stats struct {
	GeneratedAt time.Time    `json:"generated_at"`
	Queues      []QueueStats `json:"queues"`
	// InFlight counts the organization's invocations that have not ended
	// (pending, approved, executing), with the oldest one's creation.
	InFlight map[string]InFlightStats `json:"in_flight"`
	LastHour OutcomeStats             `json:"last_hour"`
}

// QueueStats is one River queue: for each job state, how many jobs are in
// it (counted up to telemetry.MaxQueueCount) and since when the oldest has
// been there.
type QueueStats struct {
	Name   string                `json:"name"`
	Paused bool                  `json:"paused"`
	States map[string]StateStats `json:"states"`
}

// StateStats is one state of one queue. OldestAt is the earliest
// scheduled_at of its jobs (attempted_at for running jobs); for scheduled
// and retryable jobs it lies ahead: when the next one is due. AgeSeconds
// is now − OldestAt, negative when it lies ahead.
type StateStats struct {
	Count      int64      `json:"count"`
	OldestAt   *time.Time `json:"oldest_at"`
	AgeSeconds *float64   `json:"age_seconds"`
}

// InFlightStats counts the invocations in one unfinished status.
type InFlightStats struct {
	Count    int64     `json:"count"`
	OldestAt time.Time `json:"oldest_at"`
}

// OutcomeStats is what ended in the last StatsWindow.
type OutcomeStats struct {
	Since         time.Time        `json:"since"`
	WindowSeconds int              `json:"window_seconds"`
	Ended         map[string]int64 `json:"ended"`
	// ThroughputPerMinute is the completed and failed invocations per
	// minute over the window.
	ThroughputPerMinute float64 `json:"throughput_per_minute"`
	// FailureRate is failed / (completed + failed), null when neither.
	FailureRate *float64 `json:"failure_rate"`
	// Buckets are StatsBucket-wide windows, oldest first, with the
	// outcomes that ended in each.
	Buckets []OutcomeBucket `json:"buckets"`
}

// OutcomeBucket is one window of OutcomeStats.
type OutcomeBucket struct {
	Start     time.Time `json:"start"`
	Completed int64     `json:"completed"`
	Failed    int64     `json:"failed"`
	Other     int64     `json:"other"`
}

// openStates are the job states the operations page shows; the finalized
// ones (completed, cancelled, discarded) are counted but have no age.
var openStates = []string{"available", "pending", "running", "retryable", "scheduled"}

// queueOldestSQL is, per queue and open state, the earliest scheduled_at
// (attempted_at for running jobs) and its age by the database clock: per
// priority the first entry of River's (state, queue, priority,
// scheduled_at) fetch index, so a few index probes per queue and state;
// running jobs are as many as workers.
const queueOldestSQL = `
SELECT name, state, oldest, extract(epoch FROM now() - oldest)::float8
FROM (
    SELECT q.name, s.state,
           CASE WHEN s.state = 'running'
                THEN (SELECT min(j.attempted_at) FROM river_job j WHERE j.state = 'running' AND j.queue = q.name)
                ELSE (SELECT min(head.scheduled_at) FROM unnest(ARRAY[1, 2, 3, 4]) AS p(priority),
                      LATERAL (SELECT j.scheduled_at FROM river_job j
                               WHERE j.state = s.state::river_job_state AND j.queue = q.name AND j.priority = p.priority
                               ORDER BY j.scheduled_at LIMIT 1) AS head)
           END AS oldest
    FROM river_queue q CROSS JOIN unnest($1::text[]) AS s(state)
) AS heads`

// Stats summarizes queues and the organization's recent outcomes, read
// from the database now, so every API process answers alike.
func (s *Service) Stats(ctx context.Context, org string) (*Stats, error) {
	now := time.Now().UTC()
	queues, err := s.deps.River.QueueList(ctx, river.NewQueueListParams())
	if err != nil {
		return nil, fmt.Errorf("listing queues: %w", err)
	}
	counts, err := telemetry.CountJobs(ctx, s.deps.Pool, telemetry.MaxQueueCount)
	if err != nil {
		return nil, err
	}
	type head struct {
		at  *time.Time
		age *float64
	}
	oldest := map[string]map[string]head{}
	rows, err := s.deps.Pool.Query(ctx, queueOldestSQL, openStates)
	if err != nil {
		return nil, fmt.Errorf("reading queue ages: %w", err)
	}
	var queue, state string
	var h head
	_, err = pgx.ForEachRow(rows, []any{&queue, &state, &h.at, &h.age}, func() error {
		if oldest[queue] == nil {
			oldest[queue] = map[string]head{}
		}
		oldest[queue][state] = h
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading queue ages: %w", err)
	}
	out := &Stats{GeneratedAt: now, Queues: make([]QueueStats, 0, len(queues.Queues)), InFlight: map[string]InFlightStats{}}
	for _, q := range queues.Queues {
		qs := QueueStats{Name: q.Name, Paused: q.PausedAt != nil, States: map[string]StateStats{}}
		for state, n := range counts[q.Name] {
			st := StateStats{Count: n}
			if h := oldest[q.Name][state]; h.at != nil && n > 0 {
				st.OldestAt, st.AgeSeconds = h.at, h.age
			}
			qs.States[state] = st
		}
		out.Queues = append(out.Queues, qs)
	}

	flight, err := s.queries.InvocationInFlight(ctx, s.deps.Pool, org)
	if err != nil {
		return nil, fmt.Errorf("counting invocations in flight: %w", err)
	}
	for _, f := range flight {
		out.InFlight[f.Status] = InFlightStats{Count: f.N, OldestAt: f.Oldest}
	}

	since := now.Add(-StatsWindow).Truncate(StatsBucket)
	ended, err := s.queries.InvocationOutcomesSince(ctx, s.deps.Pool, dbsqlc.InvocationOutcomesSinceParams{
		OrganizationID: org, Since: since, BucketSeconds: StatsBucket.Seconds(),
	})
	if err != nil {
		return nil, fmt.Errorf("counting outcomes: %w", err)
	}
	out.LastHour = outcomes(since, now, ended)
	return out, nil
}

// outcomes folds the per-window counts into OutcomeStats.
func outcomes(since, now time.Time, rows []dbsqlc.InvocationOutcomesSinceRow) OutcomeStats {
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
	Name            string  `json:"name"`
	Scope           string  `json:"scope"`
	Rate            int     `json:"rate"`
	IntervalSeconds float64 `json:"interval_seconds"`
	Burst           int     `json:"burst"`
	MaxConcurrency  int     `json:"max_concurrency"`
	// States has one entry per row: one for a global or org bucket, one
	// per source that used a per-source bucket. A bucket never used yet
	// has one full entry.
	States []RateBucketState `json:"states"`
}

// RateBucketState is the level of one bucket row now.
type RateBucketState struct {
	Source       string     `json:"source,omitempty"`
	Tokens       float64    `json:"tokens"`
	BlockedUntil *time.Time `json:"blocked_until"`
	Leases       int        `json:"leases"`
}

// RateBuckets lists the configured buckets with their current fill and
// leases as org's calls see them. Without flow control the list is empty.
func (s *Service) RateBuckets(ctx context.Context, org string) ([]RateBucket, error) {
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
