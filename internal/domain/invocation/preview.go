package invocation

import (
	"github.com/google/uuid"
	"github.com/riverqueue/river"
)

// PreviewArgs renders what a pending invocation will do (its preview,
// package internal/domain/preview). It is inserted in the transaction that
// parks the invocation, with its execute and expiry jobs.
type PreviewArgs struct {
	InvocationID uuid.UUID `json:"invocation_id"`
	// OrganizationID is the invocation's organization: row-level security
	// shows a job to its organization's API sessions only (migration 021).
	OrganizationID string `json:"organization_id"`
}

// Kind implements river.JobArgs.
func (PreviewArgs) Kind() string { return "render_preview" }

// PreviewAttempts bounds a preview job's attempts: a rendering that keeps
// failing is recorded as failed, never retried for long.
const PreviewAttempts = 3

// InsertOpts gives preview jobs few attempts.
func (PreviewArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: PreviewAttempts}
}
