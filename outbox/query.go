package outbox

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/invocation"
)

// Get returns one invocation of the organization.
func (s *Service) Get(ctx context.Context, org, id string) (invocation.Invocation, error) {
	uid, err := uuid.Parse(id)
	if err != nil {
		return invocation.Invocation{}, fmt.Errorf("%w: invocation %s", errs.NotFound, id)
	}
	return s.store.Get(ctx, s.deps.Pool, org, uid)
}

// GetInSession returns one invocation of a session; an invocation of
// another session is not found.
func (s *Service) GetInSession(ctx context.Context, org, sessionID, id string) (invocation.Invocation, error) {
	inv, err := s.Get(ctx, org, id)
	if err != nil {
		return inv, err
	}
	if deref(inv.SessionID) != sessionID {
		return invocation.Invocation{}, fmt.Errorf("%w: invocation %s", errs.NotFound, id)
	}
	return inv, nil
}

// Events returns an invocation's timeline, oldest first.
func (s *Service) Events(ctx context.Context, org, id string) ([]invocation.Event, error) {
	inv, err := s.Get(ctx, org, id)
	if err != nil {
		return nil, err
	}
	return s.store.Events(ctx, s.deps.Pool, org, inv.ID)
}

// ListSession returns a session's invocations, newest first.
func (s *Service) ListSession(ctx context.Context, org, sessionID string, page invocation.Page) ([]invocation.Invocation, error) {
	return s.store.ListSession(ctx, s.deps.Pool, org, sessionID, page)
}

// ListOrg is the organization's inbox and activity: invocations passing
// the filter, newest first, with the total count for paging.
func (s *Service) ListOrg(ctx context.Context, org string, f invocation.ListFilter, page invocation.Page) ([]invocation.Invocation, int64, error) {
	return s.store.ListOrg(ctx, s.deps.Pool, org, f, page)
}
