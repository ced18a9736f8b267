package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
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

// decodeBatch reads a batch's body, {"envelopes": [...]}, decoding each
// envelope on its own: one that cannot be decoded (a field of the wrong
// type, text Postgres cannot store) has its error at its index in errs,
// as a single envelope would get it, and never fails its neighbours.
// Like single envelopes, unknown fields are ignored.
func decodeBatch(r *http.Request) (envs []Envelope, errs []error, err error) {
	body, err := readBody(r)
	if err != nil {
		return nil, nil, err
	}
	var b struct {
		Envelopes []json.RawMessage `json:"envelopes"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return nil, nil, badRequest("invalid_json", wrongType(typeErr))
		}
		return nil, nil, badRequest("invalid_json", "request body is not valid JSON: "+err.Error())
	}
	if len(b.Envelopes) == 0 || len(b.Envelopes) > outbox.MaxBatch {
		return nil, nil, badRequest("invalid_request", fmt.Sprintf("envelopes must hold between 1 and %d envelopes", outbox.MaxBatch))
	}
	envs = make([]Envelope, len(b.Envelopes))
	errs = make([]error, len(b.Envelopes))
	for i, raw := range b.Envelopes {
		if errs[i] = checkBodyText(raw); errs[i] != nil {
			continue
		}
		var typeErr *json.UnmarshalTypeError
		switch err := json.Unmarshal(raw, &envs[i]); {
		case errors.As(err, &typeErr):
			errs[i] = badRequest("invalid_json", wrongType(typeErr))
		case err != nil:
			errs[i] = badRequest("invalid_json", "envelope is not valid JSON: "+err.Error())
		}
	}
	return envs, errs, nil
}
