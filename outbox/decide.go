package outbox

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/trace"

	"github.com/outboxd/outboxd/internal/domain/audit"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/catalog"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/grant"
	"github.com/outboxd/outboxd/internal/domain/intent"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/invocation/waits/waitstore"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/internal/platform/tracing"
	"github.com/outboxd/outboxd/outbox/outboxstore"
	"github.com/outboxd/outboxd/policy"
)

// ApproveParams is a human's approval.
type ApproveParams struct {
	OrganizationID string
	InvocationID   string
	UserID         string
	// Role is the approver's role (admin, owner), which approver groups
	// may name.
	Role string
	// Always also writes an allow override for the action: at the
	// invocation's automation scope when it has one, else for the org.
	Always bool
	// Grant, when set, also grants the next invocations like this one
	// (internal/domain/grant), in the same transaction.
	Grant *grant.Spec
	// Params, when set, replaces the invocation's params before approving
	// (the approver's edit; see Service.edit).
	Params json.RawMessage
	// Digest, when set, is the intent digest (or a prefix of it, as shown)
	// the approver reviewed: an invocation whose intent is another by the
	// time the approval locks it (another approver's edit, a request asked
	// again) is not approved, so an approval never binds what its approver
	// did not see.
	Digest string
	// Sources is the approver's token's sources claim: an invocation of a
	// source it does not allow is not found (NotFound), as for a read,
	// and nothing is changed. The zero claim (a Slack click) allows any.
	Sources auth.SourceClaim
}

// Approve clears a pending invocation to run. Releasing its parked job
// happens in the same transaction: the approval is the un-blocking.
func (s *Service) Approve(ctx context.Context, p *ApproveParams) (invocation.Invocation, error) {
	var action actionOf
	if p.Params != nil || p.Grant != nil {
		// An edit and a grant need the action's definition, which a
		// connector may have to be asked for: ask before the transaction
		// that locks the invocation, not while holding it.
		action = s.preresolve(ctx, p.OrganizationID, p.InvocationID, p.Sources)
	} else {
		action = s.resolveOf(ctx)
	}
	return s.decide(ctx, p.OrganizationID, p.InvocationID, p.Sources, "approved", func(ctx context.Context, tx pgx.Tx, inv invocation.Invocation) (invocation.Invocation, error) {
		if ownRequest(inv, p.UserID) {
			return inv, errs.Errorf(errs.SelfApproval, "%s asked for this invocation and cannot approve it: another person must", p.UserID)
		}
		if p.Digest != "" && (inv.IntentDigest == "" || !strings.HasPrefix(inv.IntentDigest, p.Digest)) {
			return inv, errs.Errorf(errs.Conflict, "the invocation's intent is %s, not the %s reviewed: it changed since (an edit, or asked again); review it again",
				cmp.Or(intent.Prefix(inv.IntentDigest), "none"), p.Digest)
		}
		var err error
		if p.Params != nil {
			inv, err = s.edit(ctx, tx, inv, p.UserID, p.Params, action)
		} else {
			inv, err = s.rekey(ctx, tx, inv, action)
		}
		if err != nil {
			return inv, err
		}
		if s.deps.Approvals != nil {
			// An approval short of the count leaves the invocation pending.
			// What outlasts the invocation (a grant, an allow mode) is the
			// releasing approval's to give: asked for earlier, the whole
			// approval is refused and rolled back.
			// A grant lets later invocations through without anyone:
			// never where one person's approval is not enough.
			done, required, err := s.deps.Approvals.Approve(ctx, tx, &inv, p.UserID, p.Role)
			switch {
			case err != nil:
			case p.Grant != nil && required > 1:
				err = errs.Invalid("grant", "an invocation of tier %s needs %d approvers each time: it cannot be granted ahead", inv.RiskLevel, required)
			case !done && p.Always:
				err = errs.Invalid("mode", "this approval does not release the invocation (more approvers must approve it): approve once; the last approver may always allow")
			}
			if err != nil || !done {
				return inv, err
			}
		}
		// Released, its job counts against the organization's fair rate
		// again: approvals at once (an approver's script, a backlog
		// decided together) queue behind other organizations' work as a
		// flood of new invocations does.
		approved, err := s.store.Approve(ctx, tx, inv.ID, p.UserID, s.behind(inv.OrganizationID))
		if err == nil && p.Grant != nil {
			err = s.createGrant(ctx, tx, &inv, p.Grant, p.UserID, action)
		}
		if err != nil || !p.Always {
			return approved, err
		}
		scope, scopeID := "org", inv.OrganizationID
		if inv.AutomationID != nil {
			scope, scopeID = "automation", *inv.AutomationID
		}
		err = s.queries.SetMode(ctx, tx, outboxstore.Override{
			OrganizationID: inv.OrganizationID, Scope: scope, ScopeID: scopeID,
			SourceID: inv.Integration, ActionID: inv.Action, Mode: string(policy.ModeAllow), UpdatedBy: p.UserID,
		})
		if err != nil {
			return inv, fmt.Errorf("writing allow override: %w", err)
		}
		return approved, nil
	})
}

// actionOf returns the action of an invocation (its source's definition).
type actionOf func(inv *invocation.Invocation) (catalog.Action, error)

// resolveOf resolves an invocation's action when asked.
func (s *Service) resolveOf(ctx context.Context) actionOf {
	return func(inv *invocation.Invocation) (catalog.Action, error) {
		return s.resolveAction(ctx, inv.OrganizationID, inv.Integration, inv.Action)
	}
}

// preresolve resolves the action of invocation id now, outside any
// transaction, and returns it when asked (an invocation's source and
// action never change). An invocation that cannot be read now is
// resolved when asked, and its decision says what is wrong; so is one of
// a source sources does not allow, whose decision is refused before that.
func (s *Service) preresolve(ctx context.Context, org, id string, sources auth.SourceClaim) actionOf {
	inv, err := s.Get(ctx, org, id, sources)
	if err != nil {
		return s.resolveOf(ctx)
	}
	action, err := s.resolveAction(ctx, inv.OrganizationID, inv.Integration, inv.Action)
	return func(got *invocation.Invocation) (catalog.Action, error) {
		if got.ID != inv.ID {
			return s.resolveAction(ctx, got.OrganizationID, got.Integration, got.Action)
		}
		return action, err
	}
}

// ownRequest reports whether approver asked for inv: with their own token,
// or as the person an automation's token acts for (its owner's own run):
// a token with an automation, or any service token's envelope, one
// without an automation_id claim included. A person may approve what an
// agent's session asks on their behalf: that is what approvals are for.
func ownRequest(inv invocation.Invocation, approver string) bool {
	return inv.RequestedBy == approver ||
		((inv.AutomationID != nil || inv.Origin == originEnvelope) && inv.UserID != nil && *inv.UserID == approver)
}

// DenyParams is a human's denial.
type DenyParams struct {
	OrganizationID string
	InvocationID   string
	UserID         string
	Role           string
	Reason         string
	// Sources is the denier's token's sources claim, as ApproveParams'.
	Sources auth.SourceClaim
}

// Deny rejects a pending invocation and cancels its parked job. The reason
// is stored as the invocation's error, redacted like every error string.
func (s *Service) Deny(ctx context.Context, p *DenyParams) (invocation.Invocation, error) {
	return s.decide(ctx, p.OrganizationID, p.InvocationID, p.Sources, "denied", func(ctx context.Context, tx pgx.Tx, inv invocation.Invocation) (invocation.Invocation, error) {
		if s.deps.Approvals != nil {
			if err := s.deps.Approvals.MayDeny(ctx, tx, &inv, p.UserID, p.Role); err != nil {
				return inv, err
			}
		}
		return s.store.Deny(ctx, tx, inv.ID, p.UserID, "human", policy.RedactString(p.Reason))
	})
}

// decide runs a human decision on a locked, pending, unexpired invocation
// of a source sources allows; one of another source is not found, with
// the very error of an unknown id, and is left as it is (not even
// expired). An invocation found past its expiry is expired (and that is
// committed) before errs.Expired is returned; one already expired is
// errs.Expired too.
func (s *Service) decide(ctx context.Context, org, id string, sources auth.SourceClaim, decision string,
	fn func(context.Context, pgx.Tx, invocation.Invocation) (invocation.Invocation, error)) (invocation.Invocation, error) {
	uid, err := uuid.Parse(id)
	if err != nil {
		return invocation.Invocation{}, NotFound(id)
	}
	// A decision comes in a request of its own, often long after the
	// invocation's: its span links to the invocation's trace, whose
	// job then runs in the trace it was enqueued in.
	ctx, span := s.tracer.Start(ctx, "outboxd.decide")
	defer span.End()
	var expired bool
	inv, err := dbutil.WithTxV(ctx, s.deps.Pool, func(ctx context.Context, tx pgx.Tx) (invocation.Invocation, error) {
		inv, err := s.store.Lock(ctx, tx, org, uid)
		if err != nil {
			return inv, err
		}
		if !sources.Allows(inv.Integration) {
			return invocation.Invocation{}, NotFound(id)
		}
		if span.IsRecording() {
			span.AddLink(trace.Link{SpanContext: tracing.Parse(inv.TraceContext)})
			span.SetAttributes(tracing.AttrInvocationID.String(inv.ID.String()), tracing.AttrOrganizationID.String(org),
				tracing.AttrSourceID.String(inv.Integration), tracing.AttrActionID.String(inv.Action), tracing.AttrDecision.String(decision))
		}
		switch {
		case inv.Status == invocation.StatusExpired:
			expired = true
			return inv, nil
		case inv.Status != invocation.StatusPending:
			return inv, fmt.Errorf("%w: invocation is %s, not pending", errs.Conflict, inv.Status)
		case inv.ExpiresAt != nil && !time.Now().Before(*inv.ExpiresAt):
			expired = true
			return s.store.Expire(ctx, tx, inv)
		}
		decided, err := fn(ctx, tx, inv)
		if err != nil {
			return decided, err
		}
		return decided, s.audited(ctx, tx, decision, decided)
	})
	if err != nil {
		tracing.Fail(span, errorCode(err))
		return inv, err
	}
	if expired {
		return inv, fmt.Errorf("%w: the approval window closed at %s", errs.Expired, inv.ExpiresAt.UTC().Format(time.RFC3339))
	}
	if inv.Status == invocation.StatusPending {
		return inv, nil // an approval recorded, more needed
	}
	s.deps.Metrics.InvocationStatus(inv.Mode, string(inv.Status))
	s.deps.Metrics.ApprovalLatency.WithLabelValues(decision).Observe(time.Since(inv.CreatedAt).Seconds())
	s.logger.InfoContext(ctx, "invocation "+decision, "invocation_id", inv.ID, "organization_id", inv.OrganizationID,
		"source_id", inv.Integration, "action_id", inv.Action, "status", inv.Status, "user_id", deref(inv.ApprovedBy))
	return inv, nil
}

// Cancel undoes an invocation that has not started: pending or approved but
// not yet executing. Anything else is errs.Conflict.
func (s *Service) Cancel(ctx context.Context, org, id, by string) (invocation.Invocation, error) {
	inv, _, err := s.cancel(ctx, org, id, by, false)
	return inv, err
}

// Withdraw is Cancel for an MCP call whose client cancelled it, run by
// the call that created the invocation: it leaves the invocation, and
// withdrawn is false, while another call waits on it in any API process
// (a retry with the same idempotency key, outboxd_wait: package waits), which
// is to get the result of its one execution.
func (s *Service) Withdraw(ctx context.Context, org, id, by string) (withdrawn bool, err error) {
	_, withdrawn, err = s.cancel(ctx, org, id, by, true)
	return withdrawn, err
}

// cancel cancels an invocation that has not started; unlessWaited, only
// when no call waits on it (package waits), which cancelled then says.
func (s *Service) cancel(ctx context.Context, org, id, by string, unlessWaited bool) (inv invocation.Invocation, cancelled bool, err error) {
	uid, err := uuid.Parse(id)
	if err != nil {
		return invocation.Invocation{}, false, fmt.Errorf("%w: invocation %s", errs.NotFound, id)
	}
	inv, err = dbutil.WithTxV(ctx, s.deps.Pool, func(ctx context.Context, tx pgx.Tx) (invocation.Invocation, error) {
		// The row's lock comes before the read of its waits: a wait's start
		// holds a share lock on it until it commits.
		inv, err := s.store.Lock(ctx, tx, org, uid)
		if err != nil {
			return inv, err
		}
		if unlessWaited {
			waited, err := waitstore.Waited(ctx, tx, uid)
			if err != nil || waited {
				return inv, err
			}
		}
		return s.cancelLocked(ctx, tx, inv, by)
	})
	if err != nil || inv.Status != invocation.StatusCancelled {
		return inv, false, err
	}
	s.deps.Metrics.InvocationStatus(inv.Mode, string(inv.Status))
	return inv, true, nil
}

// cancelLocked cancels inv, which tx locked.
func (s *Service) cancelLocked(ctx context.Context, tx pgx.Tx, inv invocation.Invocation, by string) (invocation.Invocation, error) {
	cancelled, err := s.store.Cancel(ctx, tx, inv.ID, by)
	if errors.Is(err, errs.Conflict) {
		return inv, fmt.Errorf("%w: invocation is %s and can no longer be cancelled", errs.Conflict, inv.Status)
	}
	return cancelled, err
}

// audited records a decision in the audit trail, in the decision's own
// transaction (a decision is never committed without its entry): who
// decided (the request's actor), on which invocation, and the first
// characters of the intent digest they decided on, so that a human can
// match what they approved.
func (s *Service) audited(ctx context.Context, tx pgx.Tx, decision string, inv invocation.Invocation) error {
	if _, ok := audit.ActorFrom(ctx); !ok || s.deps.Trail == nil {
		return nil // no one to name: not an API request or a Slack click
	}
	after := map[string]any{"status": inv.Status, "source_id": inv.Integration, "action_id": inv.Action}
	if inv.IntentDigest != "" {
		after["intent"] = intent.Prefix(inv.IntentDigest)
	}
	if len(inv.ParamsOriginal) > 0 {
		after["edited"] = true
	}
	action := map[string]string{"approved": "invocation.approve", "denied": "invocation.deny"}[decision]
	err := s.deps.Trail.RecordTx(ctx, tx, &audit.Change{
		Org: inv.OrganizationID, Action: action, TargetType: "invocation", TargetID: inv.ID.String(), After: after,
		Sources: []string{inv.Integration},
	})
	if err != nil {
		return fmt.Errorf("recording the decision in the audit trail: %w", err)
	}
	return nil
}
