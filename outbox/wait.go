package outbox

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/platform/batch"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
)

// A Watch is a subscription to the end of an invocation taken before the
// invocation exists: an invoke or envelope that carries it is given its
// ID. The invocation's first notification then cannot come before the
// subscription, so waiting for it needs no read until its doorbell rings
// (Wait needs one, for a worker that may have finished before it
// subscribed).
type Watch struct {
	// ID is the id the invocation will have.
	ID   uuid.UUID
	s    *Service
	rung <-chan struct{}
	stop func()
}

// Watch subscribes to the end of an invocation of org not yet created. The
// caller closes it when it stops waiting.
func (s *Service) Watch(ctx context.Context, org string) *Watch {
	w := &Watch{ID: uuid.Must(uuid.NewV7()), s: s}
	if s.deps.Waiter != nil {
		w.rung, w.stop = s.deps.Waiter.SubscribeInvocation(ctx, org, w.ID)
	}
	return w
}

// Close ends the subscription.
func (w *Watch) Close() {
	if w != nil && w.stop != nil {
		w.stop()
	}
}

// Wait waits up to d for inv to reach a terminal status and returns its
// latest state. inv must be the watched invocation as it was created or
// as an earlier Wait of w returned it: every change since rings w's
// doorbell, so it is read only when the doorbell rings (or a slow poll
// fires, for a notification lost to a reconnect). Any other invocation
// (an earlier request's, returned for a repeated key) is waited for as
// Service.Wait does.
func (w *Watch) Wait(ctx context.Context, inv invocation.Invocation, d time.Duration) (invocation.Invocation, error) {
	if w.rung == nil || inv.ID != w.ID {
		return w.s.Wait(ctx, inv, d)
	}
	return w.s.wait(ctx, inv, d, w.rung, false)
}

// Wait waits up to d for the invocation to reach a terminal status and
// returns its latest state. Workers notify in the transaction that finishes
// an invocation; a slow poll covers notifications lost to a reconnect.
func (s *Service) Wait(ctx context.Context, inv invocation.Invocation, d time.Duration) (invocation.Invocation, error) {
	var rung <-chan struct{}
	if s.deps.Waiter != nil {
		ch, unsubscribe := s.deps.Waiter.SubscribeInvocation(ctx, inv.OrganizationID, inv.ID)
		defer unsubscribe()
		rung = ch
	}
	// Read first: the worker may have finished before we subscribed.
	return s.wait(ctx, inv, d, rung, true)
}

// wait reads inv whenever rung rings or the poll fires, from the start if
// readFirst, until it is terminal or d has passed.
func (s *Service) wait(ctx context.Context, inv invocation.Invocation, d time.Duration, rung <-chan struct{}, readFirst bool) (invocation.Invocation, error) {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	poll := time.NewTicker(time.Second)
	defer poll.Stop()
	for read := readFirst; ; read = true {
		if read {
			latest, err := s.reader(dbutil.OrgFrom(ctx)).Do(ctx, inv.ID)
			if err != nil {
				return inv, err
			}
			inv = latest
		}
		if inv.Status.Terminal() {
			return inv, nil
		}
		select {
		case <-rung:
		case <-poll.C:
		case <-deadline.C:
			return inv, nil
		case <-ctx.Done():
			return inv, nil
		case <-s.stopWaits:
			return inv, nil
		}
	}
}

// reader returns the shared reads of an organization's waits (the
// caller's: they see what its tenant connection would). The workers
// finish invocations a few at a time, in one transaction each, so their
// waiters hear of them together: the reads that arrive while one is
// running go together in the next, one statement for all of them instead
// of a transaction each.
func (s *Service) reader(org string) *batch.Group[uuid.UUID, invocation.Invocation] {
	if g, ok := s.reads.Load(org); ok {
		return g.(*batch.Group[uuid.UUID, invocation.Invocation])
	}
	g, _ := s.reads.LoadOrStore(org, &batch.Group[uuid.UUID, invocation.Invocation]{
		Max:           1000,
		LeaveOnCancel: true, // a caller that stops waiting needs no read
		Run: func(ctx context.Context, ids []uuid.UUID) []batch.Result[invocation.Invocation] {
			out := make([]batch.Result[invocation.Invocation], len(ids))
			found, err := s.store.ByIDs(dbutil.WithOrg(ctx, org), s.deps.Pool, ids)
			for i, id := range ids {
				switch inv, ok := found[id]; {
				case err != nil:
					out[i].Err = err
				case !ok:
					out[i].Err = errs.Errorf(errs.NotFound, "invocation not found: %s", id)
				default:
					out[i].Value = inv
				}
			}
			return out
		},
	})
	return g.(*batch.Group[uuid.UUID, invocation.Invocation])
}
