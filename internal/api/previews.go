package api

import (
	"context"
	"time"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/domain/invocation"
)

// previewView is the API shape of what a pending invocation will do
// (internal/domain/preview's Record). The rendering is the shape every
// source renders to (executors.Preview).
type previewView struct {
	Status     string             `json:"status"`
	Preview    *executors.Preview `json:"preview,omitempty"`
	Note       string             `json:"note,omitempty"`
	RenderedAt time.Time          `json:"rendered_at"`
}

// preview returns inv's preview for its view: nil when none is recorded
// or the server reads none.
func (s *Server) preview(ctx context.Context, inv invocation.Invocation) (*previewView, error) {
	if s.previews == nil {
		return nil, nil
	}
	rec, ok, err := s.previews.Get(ctx, inv.OrganizationID, inv.ID)
	if err != nil || !ok {
		return nil, err
	}
	return &previewView{Status: string(rec.Status), Preview: rec.Preview, Note: rec.Note, RenderedAt: rec.RenderedAt}, nil
}
