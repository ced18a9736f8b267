package api

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/outboxd/outboxd/internal/domain/audit"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/grant"
	"github.com/outboxd/outboxd/internal/domain/invocation"
)

// Grants lists and revokes an organization's grants
// (internal/domain/grant); the outbox creates and uses them.
type Grants interface {
	List(ctx context.Context, org string, active bool) ([]grant.Grant, error)
	Revoke(ctx context.Context, org, id, by string) (grant.Grant, error)
	ByInvocation(ctx context.Context, org string, id uuid.UUID) (grant.Grant, bool, error)
}

// grantView is the API shape of a grant.
type grantView struct {
	ID             uuid.UUID                  `json:"id"`
	Scope          string                     `json:"scope"`
	ScopeID        string                     `json:"scope_id"`
	Integration    string                     `json:"integration"`
	Action         string                     `json:"action"`
	Fixed          map[string]json.RawMessage `json:"fixed"`
	Granted        int                        `json:"granted"`
	Remaining      int                        `json:"remaining"`
	ExpiresAt      time.Time                  `json:"expires_at"`
	Active         bool                       `json:"active"`
	DefinitionHash string                     `json:"definition_hash"`
	CreatedBy      string                     `json:"created_by"`
	CreatedFrom    uuid.UUID                  `json:"created_from"`
	CreatedAt      time.Time                  `json:"created_at"`
	RevokedAt      *time.Time                 `json:"revoked_at"`
	RevokedBy      string                     `json:"revoked_by,omitempty"`
	RevokeReason   string                     `json:"revoke_reason,omitempty"`
}

func viewGrant(g grant.Grant) grantView {
	return grantView{
		ID: g.ID, Scope: g.Scope, ScopeID: g.ScopeID, Integration: g.SourceID, Action: g.ActionID, Fixed: g.Fixed,
		Granted: g.Granted, Remaining: g.Remaining, ExpiresAt: g.ExpiresAt, Active: grant.Active(&g, time.Now()),
		DefinitionHash: g.DefinitionHash, CreatedBy: g.CreatedBy, CreatedFrom: g.CreatedFrom, CreatedAt: g.CreatedAt,
		RevokedAt: g.RevokedAt, RevokedBy: g.RevokedBy, RevokeReason: g.RevokeReason,
	}
}

func (s *Server) grantsServed() error {
	if s.grants == nil {
		return &apiError{status: http.StatusNotFound, code: "not_found", message: "grants are not served"}
	}
	return nil
}

// listGrants answers the organization's grants, newest first;
// ?active=true only those that may still let an invocation through.
func (s *Server) listGrants(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	if err := s.grantsServed(); err != nil {
		return err
	}
	var active bool
	switch r.URL.Query().Get("active") {
	case "", "false":
	case "true":
		active = true
	default:
		return invalidField("active", "active must be true or false")
	}
	gs, err := s.grants.List(r.Context(), c.Org, active)
	if err != nil {
		return err
	}
	views := viewEach(gs, viewGrant)
	if views == nil {
		views = []grantView{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"grants": views})
	return nil
}

// revokeGrant revokes a grant: the invocations it would have let through
// wait for a human again.
func (s *Server) revokeGrant(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	if err := s.grantsServed(); err != nil {
		return err
	}
	g, err := s.grants.Revoke(r.Context(), c.Org, r.PathValue("id"), c.Subject)
	if err != nil {
		return err
	}
	before := g
	before.RevokedAt, before.RevokedBy, before.RevokeReason = nil, "", ""
	s.record(r, &audit.Change{Action: "grant.revoke", TargetType: "grant", TargetID: g.ID.String(), Before: viewGrant(before), After: viewGrant(g)})
	writeJSON(w, http.StatusOK, map[string]any{"grant": viewGrant(g)})
	return nil
}

// grantCreated records in the audit trail the grant an approval of inv
// created, and returns its view (nil when grants are not served or none
// was found).
func (s *Server) grantCreated(r *http.Request, c *auth.Claims, inv invocation.Invocation) *grantView {
	if s.grants == nil {
		return nil
	}
	g, ok, err := s.grants.ByInvocation(r.Context(), c.Org, inv.ID)
	if err != nil || !ok {
		if err != nil {
			s.logger.ErrorContext(r.Context(), "reading a created grant", "organization_id", c.Org, "invocation_id", inv.ID, "error", err)
		}
		return nil
	}
	v := viewGrant(g)
	s.record(r, &audit.Change{Action: "grant.create", TargetType: "grant", TargetID: g.ID.String(), After: v})
	return &v
}

// recordRevokedGrants records in the audit trail the grants revoked with
// a credential stored again or deleted, or a connector given another url
// or auth (settings and connectors revoke them in that change's
// transaction: outboxd cannot tell whether a new token is the same
// identity's, so any replacement revokes).
func (s *Server) recordRevokedGrants(r *http.Request, ids []uuid.UUID) {
	for _, id := range ids {
		s.record(r, &audit.Change{Action: "grant.revoke", TargetType: "grant", TargetID: id.String(),
			After: map[string]string{"revoke_reason": grant.ReasonCredential, "revoked_by": grant.System}})
	}
}
