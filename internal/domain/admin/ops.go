package admin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/internal/platform/telemetry"
)

// ListDeadLetters returns the organization's failed invocations that were
// neither replayed nor discarded, of the sources sources allows (a
// token's sources claim; the zero claim: any), newest first, with the
// total.
func (s *Service) ListDeadLetters(ctx context.Context, org string, sources auth.SourceClaim, page invocation.Page) ([]invocation.Invocation, int64, error) {
	ctx = dbutil.WithOrg(ctx, org)
	return s.store.ListDeadLetters(ctx, s.deps.Pool, org, sources, page)
}

// BatchResult is the outcome of one id in a batch operation.
type BatchResult struct {
	ID     string
	Status string
	Error  string
	// Source is the dead letter's source when it was retried or
	// discarded, for the audit trail; "" otherwise.
	Source string
}

// RetryDeadLetters replays dead letters: each goes back to approved with a
// fresh execute job (a full set of attempts, its own retry policy) for the
// same invocation id, and so the same idempotency key. The dead job stays
// in River's history. Who and when is recorded. A dead letter of a source
// sources does not allow is not_found, as an unknown id is, and is left.
func (s *Service) RetryDeadLetters(ctx context.Context, org, by string, ids []string, sources auth.SourceClaim) ([]BatchResult, error) {
	return s.deadLetterBatch(ctx, org, ids, sources, "retried", func(ctx context.Context, tx pgx.Tx, inv invocation.Invocation) error {
		_, err := s.store.Replay(ctx, tx, inv, by)
		return err
	})
}

// DiscardDeadLetters drops dead letters from the list; they stay failed.
// Those of a source sources does not allow are not_found, as for
// RetryDeadLetters.
func (s *Service) DiscardDeadLetters(ctx context.Context, org, by string, ids []string, sources auth.SourceClaim) ([]BatchResult, error) {
	return s.deadLetterBatch(ctx, org, ids, sources, "discarded", func(ctx context.Context, tx pgx.Tx, inv invocation.Invocation) error {
		_, err := s.store.Discard(ctx, tx, inv.ID, by)
		return err
	})
}

// maxBatch bounds one batch request.
const maxBatch = 500

func (s *Service) deadLetterBatch(ctx context.Context, org string, ids []string, sources auth.SourceClaim, done string,
	fn func(context.Context, pgx.Tx, invocation.Invocation) error) ([]BatchResult, error) {
	if len(ids) == 0 || len(ids) > maxBatch {
		return nil, errs.Invalid("ids", "give between 1 and %d ids", maxBatch)
	}
	ctx = dbutil.WithOrg(ctx, org)
	out := make([]BatchResult, 0, len(ids))
	for _, id := range ids {
		var source string
		err := dbutil.WithTx(ctx, s.deps.Pool, func(ctx context.Context, tx pgx.Tx) error {
			uid, err := uuid.Parse(id)
			if err != nil {
				return errs.NotFound
			}
			inv, err := s.store.Lock(ctx, tx, org, uid)
			if err != nil {
				return err
			}
			if !sources.Allows(inv.Integration) {
				return errs.NotFound
			}
			if inv.Status != invocation.StatusFailed || inv.DeadLetteredAt == nil || inv.DiscardedAt != nil {
				return fmt.Errorf("%w: invocation is %s and not a dead letter", errs.Conflict, inv.Status)
			}
			source = inv.Integration
			return fn(ctx, tx, inv)
		})
		switch {
		case err == nil:
			out = append(out, BatchResult{ID: id, Status: done, Source: source})
			s.logger.InfoContext(ctx, "dead letter "+done, "invocation_id", id, "organization_id", org)
		case errors.Is(err, errs.NotFound):
			out = append(out, BatchResult{ID: id, Status: "not_found", Error: "no such invocation"})
		case errors.Is(err, errs.Conflict):
			out = append(out, BatchResult{ID: id, Status: "conflict", Error: err.Error()})
		default:
			return nil, err
		}
	}
	return out, nil
}

// QueueInfo is a River queue, shared by every organization, with its job
// counts and ages by state: the operator's view (`outboxd queue list`),
// never served to an organization.
type QueueInfo struct {
	Name     string
	Paused   bool
	PausedAt *time.Time
	States   map[string]StateStats
}

// openStates are the job states whose oldest job has an age; the finalized
// ones (completed, cancelled, discarded) are only counted.
var openStates = []string{"available", "pending", "running", "retryable", "scheduled"}

// queueOldestSQL is, per queue and open state, the earliest scheduled_at
// (attempted_at for running jobs) and its age by the database clock: per
// priority the first entry of River's (state, queue, priority,
// scheduled_at) fetch index, so a few index probes per queue and state;
// running jobs are as many as workers. For scheduled and retryable jobs
// the earliest lies ahead (a negative age): when the next one is due.
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

// Queues lists River's queues for every organization with their job counts
// by state, each capped at telemetry.MaxQueueCount, and the age of each
// open state's oldest job. It reads through the owner's pool: the tenant
// role sees only its organization's jobs.
func (s *Service) Queues(ctx context.Context) ([]QueueInfo, error) {
	res, err := s.deps.River.QueueList(ctx, river.NewQueueListParams())
	if err != nil {
		return nil, fmt.Errorf("listing queues: %w", err)
	}
	counts, err := telemetry.CountJobs(ctx, s.deps.Owner, telemetry.MaxQueueCount)
	if err != nil {
		return nil, err
	}
	type head struct {
		at  *time.Time
		age *float64
	}
	oldest := map[string]map[string]head{}
	rows, err := s.deps.Owner.Query(ctx, queueOldestSQL, openStates)
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
	out := make([]QueueInfo, 0, len(res.Queues))
	for _, q := range res.Queues {
		qi := QueueInfo{Name: q.Name, Paused: q.PausedAt != nil, PausedAt: q.PausedAt, States: map[string]StateStats{}}
		for state, n := range counts[q.Name] {
			st := StateStats{Count: n}
			if h := oldest[q.Name][state]; h.at != nil && n > 0 {
				st.OldestAt, st.AgeSeconds = h.at, h.age
			}
			qi.States[state] = st
		}
		out = append(out, qi)
	}
	return out, nil
}

// PauseQueue stops every worker process from fetching jobs of a queue until
// it is resumed, for every organization: the operator's (`outboxd queue
// pause`), not an organization's (Pause). Running jobs finish.
func (s *Service) PauseQueue(ctx context.Context, name string) error {
	return s.queueOp(ctx, name, s.deps.River.QueuePause)
}

// ResumeQueue undoes PauseQueue.
func (s *Service) ResumeQueue(ctx context.Context, name string) error {
	return s.queueOp(ctx, name, s.deps.River.QueueResume)
}

func (s *Service) queueOp(ctx context.Context, name string, op func(context.Context, string, *river.QueuePauseOpts) error) error {
	err := op(ctx, name, nil)
	if errors.Is(err, river.ErrNotFound) {
		return fmt.Errorf("%w: queue %s (queues exist once a worker has served them)", errs.NotFound, name)
	}
	return err
}
