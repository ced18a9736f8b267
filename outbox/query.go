package outbox

import (
	"context"

	"github.com/google/uuid"

	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/invocation"
)

// The reads take the reader's sources claim: an invocation of a source the
// claim does not allow is not found, with the very error of an id the
// organization does not have, and the listings leave it out (in the
// query, so that their pages and totals count only what the reader sees).
// A token's claim limits what it reads as it limits what it may invoke and
// what its event streams show.

// NotFound is the error of an invocation id the caller may not see:
// exactly that of an id the organization does not have, so that an answer
// never tells one from the other.
func NotFound(id string) error {
	if uid, err := uuid.Parse(id); err == nil {
		id = uid.String()
	}
	return errs.Errorf(errs.NotFound, "invocation not found: %s", id)
}

// Get returns one invocation of the organization of a source sources
// allows.
func (s *Service) Get(ctx context.Context, org, id string, sources auth.SourceClaim) (invocation.Invocation, error) {
	uid, err := uuid.Parse(id)
	if err != nil {
		return invocation.Invocation{}, NotFound(id)
	}
	inv, err := s.store.Get(ctx, s.deps.Pool, org, uid)
	if err != nil {
		return inv, err
	}
	if !sources.Allows(inv.Integration) {
		return invocation.Invocation{}, NotFound(id)
	}
	return inv, nil
}

// GetInSession returns one invocation of a session of a source sources
// allows; an invocation of another session is not found.
func (s *Service) GetInSession(ctx context.Context, org, sessionID, id string, sources auth.SourceClaim) (invocation.Invocation, error) {
	inv, err := s.Get(ctx, org, id, sources)
	if err != nil {
		return inv, err
	}
	if deref(inv.SessionID) != sessionID {
		return invocation.Invocation{}, NotFound(id)
	}
	return inv, nil
}

// Events returns the timeline of an invocation of a source sources allows,
// oldest first.
func (s *Service) Events(ctx context.Context, org, id string, sources auth.SourceClaim) ([]invocation.Event, error) {
	inv, err := s.Get(ctx, org, id, sources)
	if err != nil {
		return nil, err
	}
	return s.store.Events(ctx, s.deps.Pool, org, inv.ID)
}

// ListSession returns a session's invocations of the sources sources
// allows, newest first.
func (s *Service) ListSession(ctx context.Context, org, sessionID string, sources auth.SourceClaim, page invocation.Page) ([]invocation.Invocation, error) {
	return s.store.ListSession(ctx, s.deps.Pool, org, sessionID, sources, page)
}

// ListOrg is the organization's inbox and activity: invocations passing
// the filter (f.Sources: the reader's sources claim), newest first, with
// the total count for paging.
func (s *Service) ListOrg(ctx context.Context, org string, f invocation.ListFilter, page invocation.Page) ([]invocation.Invocation, int64, error) {
	return s.store.ListOrg(ctx, s.deps.Pool, org, f, page)
}
