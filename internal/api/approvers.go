package api

import (
	"context"
	"net/http"

	"github.com/google/uuid"

	"github.com/outboxd/outboxd/internal/domain/approvers"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
)

// Approvers holds the organizations' approval policies and the approvals
// of pending invocations (internal/domain/approvers).
type Approvers interface {
	Get(ctx context.Context, org string) (approvers.Policy, error)
	Put(ctx context.Context, org, by string, p approvers.Policy, ifMatch string) (approvers.Policy, error)
	Progress(ctx context.Context, db dbutil.DB, org string, invs []invocation.Invocation) (map[uuid.UUID]*approvers.Progress, error)
}

// approvalsView is where a pending invocation's approvals stand, as the
// caller sees it.
type approvalsView struct {
	Approvals         *[]approvers.Approval `json:"approvals,omitempty"`
	ApprovalsRequired int                   `json:"approvals_required,omitempty"`
	// ApproverGroup names the group that decides it; absent: the
	// organization's admins and owners.
	ApproverGroup *string `json:"approver_group,omitempty"`
	// CanApprove says whether the caller is among who may decide it
	// (the approver group; self-approval is still refused on approve).
	CanApprove *bool `json:"can_approve,omitempty"`
}

// addApprovals sets the approvals of the pending invocations among invs on
// their views (views[i] is invs[i]'s).
func (s *Server) addApprovals(r *http.Request, c *auth.Claims, invs []invocation.Invocation, views []invocationView) error {
	if s.approvers == nil {
		return nil
	}
	var pending []invocation.Invocation
	for i := range invs {
		if invs[i].Status == invocation.StatusPending {
			pending = append(pending, invs[i])
		}
	}
	if len(pending) == 0 {
		return nil
	}
	progress, err := s.approvers.Progress(r.Context(), nil, c.Org, pending)
	if err != nil {
		return err
	}
	for i := range invs {
		pr := progress[invs[i].ID]
		if pr == nil {
			continue
		}
		v := &views[i].approvalsView
		v.Approvals, v.ApprovalsRequired = &pr.Approvals, pr.Required
		if pr.Group != nil {
			v.ApproverGroup = &pr.Group.Name
		}
		if c.Kind == auth.KindUser {
			can := c.CanAdminister() && pr.Eligible(approvers.Approver{UserID: c.Subject, Role: string(c.Role)})
			v.CanApprove = &can
		}
	}
	return nil
}

// viewWithApprovals is viewInvocation with its approvals; on a failure to
// read them it is the view without.
func (s *Server) viewWithApprovals(r *http.Request, c *auth.Claims, inv invocation.Invocation) invocationView {
	views := []invocationView{viewInvocation(inv)}
	if err := s.addApprovals(r, c, []invocation.Invocation{inv}, views); err != nil {
		s.logger.WarnContext(r.Context(), "loading approvals", "invocation_id", inv.ID, "error", err)
	}
	return views[0]
}

var errApproversNotServed = &apiError{status: http.StatusNotFound, code: "not_found", message: "approval policies are not served"}

func (s *Server) getApprovalPolicy(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	if s.approvers == nil {
		return errApproversNotServed
	}
	p, err := s.approvers.Get(r.Context(), c.Org)
	if err != nil {
		return err
	}
	setETag(w, approvers.ETag(p))
	writeJSON(w, http.StatusOK, p)
	return nil
}

// putApprovalPolicy replaces the organization's approval policy:
// {"required": {"R4": 2}, "groups": [...]}.
func (s *Server) putApprovalPolicy(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	if s.approvers == nil {
		return errApproversNotServed
	}
	var body *approvers.Policy
	if err := decode(r, &body, false); err != nil {
		return err
	}
	if body == nil {
		// A JSON null would otherwise replace the policy with none.
		return badRequest("invalid_json", `request body must be a JSON object {"required": {...}, "groups": [...]}`)
	}
	p, err := s.approvers.Put(r.Context(), c.Org, c.Subject, *body, r.Header.Get("If-Match"))
	if err != nil {
		return err
	}
	setETag(w, approvers.ETag(p))
	writeJSON(w, http.StatusOK, p)
	return nil
}
