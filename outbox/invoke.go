package outbox

import (
	"cmp"
	"context"
	"encoding/json"

	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/invocation"
)

// InvokeParams is an agent's request to run one action in its session.
type InvokeParams struct {
	OrganizationID string
	SessionID      string
	AutomationID   string
	// UserID is the human the session acts for, if any.
	UserID      string
	RequestedBy string
	// Sources is the token's sources claim: absent, any source; present,
	// only those it lists.
	Sources auth.SourceClaim
	// Token is the verified token that asks, nil for none: the invocation
	// records its jti and iat, and is withdrawn if a revocation refuses it
	// when it is recorded (invocation.CreateParams.Token): Invoke then
	// returns it, cancelled, with an invocation.RevokedError.
	Token          *auth.Claims
	Integration    string
	Action         string
	Params         json.RawMessage
	IdempotencyKey string
	// Origin is how it was asked: "" for the REST invoke, OriginMCP for
	// the MCP front door.
	Origin string
	// Watch, when set, is the caller's subscription to the invocation's
	// end (Service.Watch), which the invocation is created for and the
	// sync wait uses; without it the invoke takes its own.
	Watch *Watch
}

// Invoke records an invocation and its job. An allow-mode invocation is then
// waited for (up to SyncWait) so the caller usually gets the result in the
// same request; the returned invocation may still be approved or executing
// when the wait ran out.
func (s *Service) Invoke(ctx context.Context, p *InvokeParams) (invocation.Invocation, error) {
	if p.Integration == "" || p.Action == "" {
		return invocation.Invocation{}, errs.Invalid("integration", "integration and action are required")
	}
	watch := p.Watch
	if watch == nil {
		watch = s.Watch(ctx, p.OrganizationID)
		defer watch.Close()
	}
	inv, _, err := s.submit(ctx, &request{
		id:             watch.ID,
		org:            p.OrganizationID,
		sessionID:      p.SessionID,
		automationID:   p.AutomationID,
		userID:         p.UserID,
		requestedBy:    p.RequestedBy,
		origin:         cmp.Or(p.Origin, originInvoke),
		source:         p.Integration,
		action:         p.Action,
		params:         p.Params,
		sources:        p.Sources,
		token:          invocation.TokenOf(p.Token),
		idempotencyKey: p.IdempotencyKey,
	})
	if err != nil {
		return inv, err
	}
	if inv.Status == invocation.StatusApproved || inv.Status == invocation.StatusExecuting {
		return watch.Wait(ctx, inv, s.cfg.SyncWait)
	}
	return inv, nil
}
