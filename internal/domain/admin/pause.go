package admin

import (
	"context"
	"fmt"
	"time"

	"github.com/outboxd/outboxd/internal/platform/dbutil"
)

// OrgQueue is an organization's own view of its work: whether it is
// paused, and its unfinished invocations by where they stand (pending,
// queued, retrying, running). It is computed from the organization's
// invocations alone; River's queues, shared by every organization, are the
// operator's (`outboxd queue`).
type OrgQueue struct {
	Paused   bool
	PausedAt *time.Time
	PausedBy *string
	// States has an entry for each of OrgQueueStates, zero when empty.
	States map[string]StateStats
}

// OrgQueueStates are the states of OrgQueue.States: pending (awaiting
// approval), queued (approved and never started: waiting for a worker, a
// rate-bucket token, quiet hours or the pause), retrying (waiting for its
// next attempt or a provider's Retry-After) and running.
var OrgQueueStates = []string{"pending", "queued", "retrying", "running"}

// StateStats is one state of an organization's queue: how many
// invocations are in it and since when the one there longest has been
// (OldestAt), with its age by the database clock; both nil when empty.
type StateStats struct {
	Count      int64
	OldestAt   *time.Time
	AgeSeconds *float64
}

// Queue returns org's view of its work.
func (s *Service) Queue(ctx context.Context, org string) (*OrgQueue, error) {
	ctx = dbutil.WithOrg(ctx, org)
	q := &OrgQueue{States: make(map[string]StateStats, len(OrgQueueStates))}
	for _, st := range OrgQueueStates {
		q.States[st] = StateStats{}
	}
	rows, err := s.own.QueueStates(ctx, org)
	if err != nil {
		return nil, fmt.Errorf("counting the organization's invocations: %w", err)
	}
	for _, r := range rows {
		q.States[r.State] = StateStats{Count: r.N, OldestAt: &r.Oldest, AgeSeconds: &r.AgeSeconds}
	}
	pause, paused, err := s.own.Paused(ctx, org)
	if err != nil {
		return nil, fmt.Errorf("reading the organization's pause: %w", err)
	}
	if paused {
		q.Paused, q.PausedAt, q.PausedBy = true, &pause.PausedAt, &pause.PausedBy
	}
	return q, nil
}

// Pause stops org's actions from running until Resume: the workers hold
// its execute jobs (no call, no attempt spent) while every other
// organization's run as before. Calls already under way finish. Enqueues,
// invokes and approvals are still accepted and wait. Pausing a paused
// organization changes nothing.
func (s *Service) Pause(ctx context.Context, org, by string) (*OrgQueue, error) {
	ctx = dbutil.WithOrg(ctx, org)
	p, err := s.own.InsertPause(ctx, org, by)
	if err != nil {
		return nil, fmt.Errorf("pausing the organization: %w", err)
	}
	s.logger.InfoContext(ctx, "organization paused", "organization_id", org, "paused_by", p.PausedBy, "paused_at", p.PausedAt)
	return s.Queue(ctx, org)
}

// Resume ends org's pause and makes the jobs it held available at once.
// Resuming an organization that is not paused changes nothing.
func (s *Service) Resume(ctx context.Context, org, by string) (*OrgQueue, error) {
	ctx = dbutil.WithOrg(ctx, org)
	paused, released, err := s.own.DeletePause(ctx, org)
	if err != nil {
		return nil, fmt.Errorf("resuming the organization: %w", err)
	}
	if paused {
		s.logger.InfoContext(ctx, "organization resumed", "organization_id", org, "resumed_by", by, "released_jobs", released)
	}
	return s.Queue(ctx, org)
}
