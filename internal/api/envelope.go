package api

import (
	"encoding/json"
	"time"

	"github.com/outboxd/outboxd/outbox"
)

// Envelope is the Universal Action Envelope as a request body, which the
// HTTP layer converts to outbox.Envelope. It and its parts keep the names
// encoding/json gives in its errors ("Go struct field
// EnvelopeRetry.constraints.retry.max_attempts of type int").
type Envelope struct {
	ExternalID   string              `json:"external_id"`
	AutomationID string              `json:"automation_id,omitempty"`
	Tool         EnvelopeTool        `json:"tool"`
	Args         json.RawMessage     `json:"args"`
	Risk         string              `json:"risk,omitempty"`
	Approval     string              `json:"approval,omitempty"`
	Constraints  EnvelopeConstraints `json:"constraints"`
}

// EnvelopeTool converts to outbox.EnvelopeTool, so the two keep the same
// fields.
type EnvelopeTool struct {
	Name   string `json:"name,omitempty"`
	Source string `json:"source,omitempty"`
	Action string `json:"action,omitempty"`
}

// EnvelopeConstraints are the envelope's execution constraints.
type EnvelopeConstraints struct {
	RateBucket    string         `json:"rate_bucket,omitempty"`
	MustRunBefore *time.Time     `json:"must_run_before,omitempty"`
	Retry         *EnvelopeRetry `json:"retry,omitempty"`
}

// EnvelopeRetry converts to outbox.EnvelopeRetry, so the two keep the same
// fields.
type EnvelopeRetry struct {
	MaxAttempts int    `json:"max_attempts,omitempty"`
	BaseDelay   string `json:"base_delay,omitempty"`
	MaxDelay    string `json:"max_delay,omitempty"`
}

// envelope converts e to the outbox's envelope, which checks its fields.
func (e *Envelope) envelope() outbox.Envelope {
	return outbox.Envelope{
		ExternalID: e.ExternalID, AutomationID: e.AutomationID, Tool: outbox.EnvelopeTool(e.Tool), Args: e.Args,
		Risk: e.Risk, Approval: e.Approval,
		Constraints: outbox.EnvelopeConstraints{
			RateBucket: e.Constraints.RateBucket, MustRunBefore: e.Constraints.MustRunBefore,
			Retry: (*outbox.EnvelopeRetry)(e.Constraints.Retry),
		},
	}
}
