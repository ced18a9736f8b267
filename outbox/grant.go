package outbox

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outboxd/outboxd/internal/domain/audit"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/grant"
	"github.com/outboxd/outboxd/internal/domain/intent"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/policy"
)

// useGrant lets a request that would wait for a human through when a live
// grant covers it (internal/domain/grant): the grant's use and the
// invocation, created approved with the grant's id, commit in tx together.
// A request that asked for a human itself (approval=required, a risk hint
// that tightened its mode) still gets one: approval=required also where
// the mode already required approval, which its mode_source does not say.
func (s *Service) useGrant(ctx context.Context, tx pgx.Tx, p *prepared, create *invocation.CreateParams) error {
	if create.Status != invocation.StatusPending || create.ModeSource == string(policy.SourceRequest) || create.Approval == "required" {
		return nil
	}
	hash, err := policy.DefinitionHash(p.action.Definition.Params)
	if err != nil {
		// A definition that cannot be hashed matches no grant.
		return nil //nolint:nilerr // the request waits for a human
	}
	id, revoked, err := s.grants.Use(ctx, tx, &grant.Request{
		Org: create.OrganizationID, SourceID: create.Integration, ActionID: create.Action,
		SessionID: create.SessionID, AutomationID: create.AutomationID, UserID: create.UserID, Params: create.Params, Exact: p.r.params,
		DefinitionHash: hash, Drifted: p.action.ReviewDrifted(hash),
	})
	if err != nil {
		return err
	}
	if err := s.auditDriftRevoked(ctx, tx, create.OrganizationID, create.Integration, revoked); err != nil {
		return err
	}
	if id == nil {
		return nil
	}
	if s.deps.Approvals != nil {
		// A grant lets invocations through without anyone: never where
		// one person's approval is not enough, as the approval policy may
		// say since the grant was made. The use is given back.
		n, err := s.deps.Approvals.Required(ctx, tx, create.OrganizationID, policy.TierOf(create.RiskLevel))
		if err != nil {
			return err
		}
		if n > 1 {
			return s.grants.GiveBack(ctx, tx, create.OrganizationID, *id)
		}
	}
	create.Status = invocation.StatusApproved
	create.ExpiresAt = nil
	create.Mode = string(policy.ModeAllow)
	create.ModeSource = grant.ModeSource
	create.GrantID = id
	return nil
}

// auditDriftRevoked records in the audit trail, in tx, the grants of
// source that an action's changed definition revoked: outboxd's own
// change, as the grants revoked with a replaced credential are.
func (s *Service) auditDriftRevoked(ctx context.Context, tx pgx.Tx, org, source string, revoked []uuid.UUID) error {
	if s.deps.Trail == nil {
		return nil
	}
	for _, id := range revoked {
		err := s.deps.Trail.RecordTx(ctx, tx, &audit.Change{
			Org: org, Actor: &audit.Actor{Subject: grant.System, Kind: audit.KindInternal},
			Action: "grant.revoke", TargetType: "grant", TargetID: id.String(), Sources: []string{source},
			After: map[string]string{"revoke_reason": grant.ReasonDrift, "revoked_by": grant.System},
		})
		if err != nil {
			return fmt.Errorf("recording a drifted grant's revocation in the audit trail: %w", err)
		}
	}
	return nil
}

// createGrant stores the grant an approver asked for with the approval of
// inv, in the approval's transaction.
func (s *Service) createGrant(ctx context.Context, tx pgx.Tx, inv *invocation.Invocation, spec *grant.Spec, by string, resolve actionOf) error {
	if inv.ModeSource == string(policy.SourceDriftGuard) {
		return errs.Errorf(errs.Conflict, "%s.%s changed since its review: review the tool before granting more of it", inv.Integration, inv.Action)
	}
	action, err := resolve(inv)
	if err != nil {
		return err
	}
	hash, err := policy.DefinitionHash(action.Definition.Params)
	if err != nil {
		return fmt.Errorf("hashing the definition of %s.%s: %w", inv.Integration, inv.Action, err)
	}
	if action.ReviewDrifted(hash) {
		return errs.Errorf(errs.Conflict, "%s.%s changed since its review: review the tool before granting more of it", inv.Integration, inv.Action)
	}
	// The approver saw the definition the intent was sealed with: a grant
	// for another one would let through what nobody reviewed.
	var sealed intent.Components
	if len(inv.Intent) > 0 && json.Unmarshal(inv.Intent, &sealed) == nil && sealed.Definition != "" && sealed.Definition != hash {
		return errs.Errorf(errs.Conflict, "%s.%s was redefined since this invocation was asked for, and no grant is made for a definition its approver did not see: approve it without a grant (it is then asked again for the new definition, whose approval may make one)", inv.Integration, inv.Action)
	}
	exact, err := s.exactParams(*inv)
	if err != nil {
		return err
	}
	_, err = s.grants.Create(ctx, tx, inv, exact, spec, hash, by)
	return err
}
