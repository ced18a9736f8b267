package outbox

import (
	"context"
	"errors"

	"github.com/outboxd/outboxd/internal/domain/invocation"
)

// FeedParams select the events of a stream.
type FeedParams = invocation.FeedParams

// Subscribe returns a doorbell that rings when an event of the organization
// may have been written (by any process), and a function to hang up. The
// subscriber reads the events with Feed from its own cursor, after
// Subscribe returns: from then on the organization's events are announced.
func (s *Service) Subscribe(ctx context.Context, org string) (<-chan struct{}, func()) {
	ch, unsubscribe := s.waiter.subscribeOrg(ctx, org)
	s.deps.Metrics.StreamSubscribers.Inc()
	return ch, func() {
		unsubscribe()
		s.deps.Metrics.StreamSubscribers.Dec()
	}
}

// Feed returns the notices after p.After, oldest first; held says that
// later events exist but are not yet safe to deliver, so ask again soon.
func (s *Service) Feed(ctx context.Context, p *FeedParams) ([]invocation.FeedItem, bool, error) {
	return s.store.Feed(ctx, s.deps.Pool, p)
}

// FeedCursor returns where a stream resumes: after the organization's
// event afterID (0: before every event). An id the organization does not
// have is a validation error.
func (s *Service) FeedCursor(ctx context.Context, org string, afterID int64) (invocation.Cursor, error) {
	if afterID == 0 {
		return invocation.Cursor{}, nil
	}
	c, err := s.store.FeedCursor(ctx, s.deps.Pool, org, afterID)
	if errors.Is(err, invocation.ErrEventNotFound) {
		return c, &ValidationError{Message: err.Error()}
	}
	return c, err
}

// FeedResume returns where a stream resumes from a position it sent. A
// position no stream can have sent yet (beyond the horizon) is a
// validation error.
func (s *Service) FeedResume(ctx context.Context, pos invocation.Cursor) (invocation.Cursor, error) {
	now, err := s.FeedNow(ctx)
	if err != nil {
		return pos, err
	}
	if pos.XID >= now.XID {
		return pos, &ValidationError{Message: "that position is beyond the present"}
	}
	return pos, nil
}

// FeedNow returns the cursor of a stream that starts now.
func (s *Service) FeedNow(ctx context.Context) (invocation.Cursor, error) {
	return s.store.FeedNow(ctx, s.deps.Pool)
}
