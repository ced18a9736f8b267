// Package preview is what a pending invocation will do, rendered for the
// people who decide it: the source's rendering (executors.Preview) of the
// action with its params, made by a worker job (worker.PreviewWorker,
// never the API process) with the invocation's credential, redacted like
// results, and stored for the approval card (console, Slack) and GET
// /v1/invocations/{id}. A rendering that fails leaves the card with the
// raw params and a note saying why.
package preview

import (
	"time"

	"github.com/outboxd/outboxd/executors"
)

// Status is what came of rendering an invocation's preview.
type Status string

// The statuses of a Record.
const (
	// StatusRendered: Preview holds the rendering.
	StatusRendered Status = "rendered"
	// StatusFailed: the rendering failed; Note says why.
	StatusFailed Status = "failed"
	// StatusUnsupported: the action renders no preview.
	StatusUnsupported Status = "unsupported"
)

// Record is an invocation's stored preview.
type Record struct {
	Status Status `json:"status"`
	// Preview is the rendering; nil unless Status is rendered.
	Preview *executors.Preview `json:"preview,omitempty"`
	// Note says why there is no rendering, or what it could not resolve.
	Note       string    `json:"note,omitempty"`
	RenderedAt time.Time `json:"rendered_at"`
}

// Timeout bounds one rendering: the provider reads it makes.
const Timeout = 10 * time.Second
