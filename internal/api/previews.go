package api

import (
	"context"

	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/preview"
)

// preview returns inv's preview for its view: nil when none is recorded
// or the server reads none.
func (s *Server) preview(ctx context.Context, inv invocation.Invocation) (*preview.Record, error) {
	if s.previews == nil {
		return nil, nil
	}
	rec, ok, err := s.previews.Get(ctx, inv.OrganizationID, inv.ID)
	if err != nil || !ok {
		return nil, err
	}
	return &rec, nil
}
