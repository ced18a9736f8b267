package api

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/outboxd/outboxd/internal/domain/audit"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/catalog"
	"github.com/outboxd/outboxd/internal/domain/grant"
	"github.com/outboxd/outboxd/internal/domain/invocation"
)

// Grants lists and revokes an organization's grants
// (internal/domain/grant); the outbox creates and uses them. Both take the
// token's sources claim: a grant of another source is not listed, and is
// not found as an unknown id is.
type Grants interface {
	List(ctx context.Context, org string, sources auth.SourceClaim, active bool) ([]grant.Grant, error)
	Revoke(ctx context.Context, org, id, by string, sources auth.SourceClaim) (grant.Grant, error)
	ByInvocation(ctx context.Context, org string, id uuid.UUID) (grant.Grant, bool, error)
}

// grantView is the API shape of a grant.
type grantView struct {
	ID      uuid.UUID `json:"id"`
	Scope   string    `json:"scope"`
	ScopeID string    `json:"scope_id"`
	// UserID is the user whose invocations it lets through (null: those
	// made for no user).
	UserID      *string                    `json:"user_id"`
	Integration string                     `json:"integration"`
	Action      string                     `json:"action"`
	Fixed       map[string]json.RawMessage `json:"fixed"`
	Granted     int                        `json:"granted"`
	Remaining   int                        `json:"remaining"`
	ExpiresAt   time.Time                  `json:"expires_at"`
	Active      bool                       `json:"active"`
	// Drifted says the action's definition changed since the grant was
	// made (or a reviewed connector tool drifted): it lets nothing
	// through, and is revoked at the action's next invocation.
	Drifted        bool       `json:"drifted"`
	DefinitionHash string     `json:"definition_hash"`
	CreatedBy      string     `json:"created_by"`
	CreatedFrom    uuid.UUID  `json:"created_from"`
	CreatedAt      time.Time  `json:"created_at"`
	RevokedAt      *time.Time `json:"revoked_at"`
	RevokedBy      string     `json:"revoked_by,omitempty"`
	RevokeReason   string     `json:"revoke_reason,omitempty"`
}

func viewGrant(g grant.Grant) grantView {
	return grantView{
		ID: g.ID, Scope: g.Scope, ScopeID: g.ScopeID, UserID: nilIfEmpty(g.UserID), Integration: g.SourceID, Action: g.ActionID, Fixed: g.Fixed,
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

// listGrants answers the organization's grants of the sources the token's
// sources claim allows, newest first; ?active=true only those that may
// still let an invocation through.
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
	gs, err := s.grants.List(r.Context(), c.Org, c.Sources, active)
	if err != nil {
		return err
	}
	views := viewEach(gs, viewGrant)
	if err := s.markDrifted(r.Context(), c, views); err != nil {
		return err
	}
	if active {
		views = slices.DeleteFunc(views, func(v grantView) bool { return v.Drifted })
	}
	if views == nil {
		views = []grantView{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"grants": views})
	return nil
}

// markDrifted marks the active grants whose action's definition is not
// the one they were made for, as the catalog lists it now: the outbox
// revokes them at the action's next invocation (grant.Keeper.Use), and
// until then they are shown for what they are, not active. An action the
// catalog does not list now (an unreachable connector) is left as it is.
func (s *Server) markDrifted(ctx context.Context, c *auth.Claims, views []grantView) error {
	if !slices.ContainsFunc(views, func(v grantView) bool { return v.Active }) {
		return nil
	}
	listing, err := s.catalog.All(ctx, &catalog.Caller{OrganizationID: c.Org})
	if err != nil {
		return err
	}
	type key struct{ source, action string }
	current := map[key]catalog.AvailableAction{}
	for _, a := range listing.Actions {
		current[key{a.Source, a.Action}] = a
	}
	for i := range views {
		v := &views[i]
		if a, ok := current[key{v.Integration, v.Action}]; ok && v.Active && !grant.Covers(v.DefinitionHash, a.Hash, a.Drifted) {
			v.Drifted, v.Active = true, false
		}
	}
	return nil
}

// revokeGrant revokes a grant: the invocations it would have let through
// wait for a human again. A grant of a source the token's sources claim
// does not allow is not found, as an unknown id is.
func (s *Server) revokeGrant(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	if err := s.grantsServed(); err != nil {
		return err
	}
	g, err := s.grants.Revoke(r.Context(), c.Org, r.PathValue("id"), c.Subject, c.Sources)
	if err != nil {
		return err
	}
	before := g
	before.RevokedAt, before.RevokedBy, before.RevokeReason = nil, "", ""
	s.record(r, &audit.Change{Action: "grant.revoke", TargetType: "grant", TargetID: g.ID.String(), Before: viewGrant(before), After: viewGrant(g),
		Sources: []string{g.SourceID}})
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
	s.record(r, &audit.Change{Action: "grant.create", TargetType: "grant", TargetID: g.ID.String(), After: v, Sources: []string{g.SourceID}})
	return &v
}

// recordRevokedGrants records in the audit trail the grants of source
// revoked with a credential stored again or deleted, or a connector or a
// database given another url or auth (settings, connectors and databases
// revoke them in that change's transaction: outboxd cannot tell whether a
// new token is the same identity's, so any replacement revokes).
func (s *Server) recordRevokedGrants(r *http.Request, ids []uuid.UUID, source string) {
	for _, id := range ids {
		s.record(r, &audit.Change{Action: "grant.revoke", TargetType: "grant", TargetID: id.String(), Sources: []string{source},
			After: map[string]string{"revoke_reason": grant.ReasonCredential, "revoked_by": grant.System}})
	}
}
