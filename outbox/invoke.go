package outbox

import (
	"cmp"
	"context"
	"encoding/json"
	"time"

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
	Sources        auth.SourceClaim
	Integration    string
	Action         string
	Params         json.RawMessage
	IdempotencyKey string
	// Origin is how it was asked: "" for the REST invoke, OriginMCP for
	// the MCP front door.
	Origin string
}

// Invoke records an invocation and its job. An allow-mode invocation is then
// waited for (up to SyncWait) so the caller usually gets the result in the
// same request; the returned invocation may still be approved or executing
// when the wait ran out.
func (s *Service) Invoke(ctx context.Context, p *InvokeParams) (invocation.Invocation, error) {
	if p.Integration == "" || p.Action == "" {
		return invocation.Invocation{}, errs.Invalid("integration", "integration and action are required")
	}
	inv, _, err := s.submit(ctx, &request{
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
		idempotencyKey: p.IdempotencyKey,
	})
	if err != nil {
		return inv, err
	}
	if inv.Status == invocation.StatusApproved || inv.Status == invocation.StatusExecuting {
		return s.Wait(ctx, inv, s.cfg.SyncWait)
	}
	return inv, nil
}

// Wait waits up to d for the invocation to reach a terminal status and
// returns its latest state. Workers notify in the transaction that finishes
// an invocation; a slow poll covers notifications lost to a reconnect.
func (s *Service) Wait(ctx context.Context, inv invocation.Invocation, d time.Duration) (invocation.Invocation, error) {
	var done <-chan struct{}
	if s.deps.Waiter != nil {
		ch, unsubscribe := s.deps.Waiter.SubscribeInvocation(ctx, inv.OrganizationID, inv.ID)
		defer unsubscribe()
		done = ch
	}
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	poll := time.NewTicker(time.Second)
	defer poll.Stop()
	for {
		// Re-read first: the worker may have finished before we subscribed.
		latest, err := s.store.GetByID(ctx, s.deps.Pool, inv.ID)
		if err != nil {
			return inv, err
		}
		inv = latest
		if inv.Status.Terminal() {
			return inv, nil
		}
		select {
		case <-done:
		case <-poll.C:
		case <-deadline.C:
			return inv, nil
		case <-ctx.Done():
			return inv, nil
		}
	}
}
