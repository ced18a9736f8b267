package revocation

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/revocation/revocationstore"
)

// WithdrawalReason is the reason on the cancelled event of an invocation
// r withdrew: the revocation and what it revoked. A revocation's own
// transaction gives it to what it withdraws (SetInvocations), and a
// transaction recording what a revoked token asked for to what it
// withdraws there (Refusals).
func WithdrawalReason(r *Revocation) string {
	what := "every token issued before " + r.IssuedBefore.UTC().Format(time.RFC3339)
	switch {
	case r.JTI != "":
		what = fmt.Sprintf("jti %q", r.JTI)
	case r.SessionID != "":
		what = fmt.Sprintf("session_id %q", r.SessionID)
	case r.AutomationID != "":
		what = fmt.Sprintf("automation_id %q", r.AutomationID)
	case r.Subject != "":
		what = fmt.Sprintf("subject %q", r.Subject)
	}
	return fmt.Sprintf("withdrawn: the tokens that asked for it were revoked (revocation %d, %s)", r.ID, what)
}

// Refusals finds, in a transaction recording invocations, the revocations
// that refuse the tokens that asked for them (invocationstore.Refusals;
// the outbox's store records with it). It holds nothing: it looks in the
// transaction it is given.
type Refusals struct{}

// Refusing returns, for each of tokens, the oldest revocation of org in
// effect that refuses it, nil where none does, as the refusal that
// withdraws its invocation: the revoker and WithdrawalReason. It takes
// org's revocation lock shared in tx and then looks, in one round trip
// (revocationstore.Refusing, which says how this orders it with the
// revocations' own transactions).
func (Refusals) Refusing(ctx context.Context, tx pgx.Tx, org string, tokens []*invocation.Token) ([]*invocation.Refusal, error) {
	rs, err := revocationstore.Refusing(ctx, tx, org, tokens)
	if err != nil {
		return nil, err
	}
	out := make([]*invocation.Refusal, len(rs))
	for i, r := range rs {
		if r != nil {
			out[i] = &invocation.Refusal{RevocationID: r.ID, RevokedBy: r.RevokedBy, Reason: WithdrawalReason(r)}
		}
	}
	return out, nil
}
