package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/outboxd/outboxd/internal/dbsqlc"
	"github.com/outboxd/outboxd/policy"
)

// Envelope is the Universal Action Envelope an automation enqueues.
type Envelope struct {
	ExternalID   string          `json:"external_id"`
	AutomationID string          `json:"automation_id,omitempty"`
	Tool         EnvelopeTool    `json:"tool"`
	Args         json.RawMessage `json:"args"`
	// Risk is an optional hint (low|medium|high, read|write|danger, R0–R4);
	// it can only tighten the resolved mode.
	Risk string `json:"risk,omitempty"`
	// Approval is "auto" (the cascade decides) or "required" (always ask a
	// human). Default auto.
	Approval    string              `json:"approval,omitempty"`
	Constraints EnvelopeConstraints `json:"constraints"`
}

// EnvelopeTool names the action, either as source and action or as
// name "<source>.<action>".
type EnvelopeTool struct {
	Name   string `json:"name,omitempty"`
	Source string `json:"source,omitempty"`
	Action string `json:"action,omitempty"`
}

// EnvelopeConstraints are the envelope's execution constraints.
type EnvelopeConstraints struct {
	RateBucket    string     `json:"rate_bucket,omitempty"`
	MustRunBefore *time.Time `json:"must_run_before,omitempty"`
}

// EnqueueParams is who enqueues an envelope.
type EnqueueParams struct {
	OrganizationID string
	RequestedBy    string
	// AutomationID is the token's automation; the envelope's own
	// automation_id is used when the token has none.
	AutomationID string
	// UserID is the human the automation acts for, if any.
	UserID   string
	Envelope Envelope
}

// Enqueue records an envelope's invocation and job. created is false when an
// envelope with the same external id already existed; it is returned as is.
func (s *Service) Enqueue(ctx context.Context, p *EnqueueParams) (inv dbsqlc.ActionInvocation, created bool, err error) {
	env := p.Envelope
	if env.ExternalID == "" {
		return inv, false, invalid("external_id", "external_id is required")
	}
	if len(env.ExternalID) > 255 {
		return inv, false, invalid("external_id", "external_id must be at most 255 characters")
	}
	source, action := env.Tool.Source, env.Tool.Action
	if env.Tool.Name != "" {
		if source != "" || action != "" {
			return inv, false, invalid("tool", "give either tool.name or tool.source and tool.action, not both")
		}
		i := strings.LastIndex(env.Tool.Name, ".")
		if i <= 0 || i == len(env.Tool.Name)-1 {
			return inv, false, invalid("tool.name", "tool.name must be <source>.<action>")
		}
		source, action = env.Tool.Name[:i], env.Tool.Name[i+1:]
	}
	if source == "" || action == "" {
		return inv, false, invalid("tool", "tool.source and tool.action are required")
	}
	if env.Risk != "" && !policy.ValidRisk(env.Risk) {
		return inv, false, invalid("risk", "risk must be one of low, medium, high, read, write, danger, R0–R4")
	}
	var approvalRequired bool
	switch env.Approval {
	case "", "auto":
	case "required":
		approvalRequired = true
	default:
		return inv, false, invalid("approval", "approval must be auto or required")
	}
	automationID := p.AutomationID
	if automationID == "" {
		automationID = env.AutomationID
	} else if env.AutomationID != "" && env.AutomationID != automationID {
		return inv, false, invalid("automation_id", "automation_id differs from the token's automation")
	}
	return s.submit(ctx, &request{
		org:              p.OrganizationID,
		automationID:     automationID,
		userID:           p.UserID,
		requestedBy:      p.RequestedBy,
		origin:           originEnvelope,
		source:           source,
		action:           action,
		params:           env.Args,
		externalID:       env.ExternalID,
		riskHint:         env.Risk,
		approvalRequired: approvalRequired,
		rateBucket:       env.Constraints.RateBucket,
		mustRunBefore:    env.Constraints.MustRunBefore,
	})
}

// GetEnvelope returns an envelope's invocation by its action id.
func (s *Service) GetEnvelope(ctx context.Context, org string, id string) (dbsqlc.ActionInvocation, error) {
	inv, err := s.Get(ctx, org, id)
	if err != nil {
		return inv, err
	}
	if inv.Origin != originEnvelope {
		return inv, fmt.Errorf("%w: envelope %s", ErrNotFound, id)
	}
	return inv, nil
}
