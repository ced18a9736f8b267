package invocationstore

import (
	"context"
	"errors"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/outboxd/outboxd/internal/domain/invocation"
)

// Refusals finds the revocations that refuse the tokens asking for the
// invocations a transaction records (package revocation's Refusals).
type Refusals interface {
	// Refusing returns, for each of tokens, the revocation of org in
	// effect that refuses it, nil where none does: looked for in tx, a
	// transaction recording invocations of org that these tokens asked
	// for, after taking org's revocation lock shared (one round trip for
	// both), so that a token revoked before tx commits is either seen or
	// its revocation waits for tx and withdraws the invocations itself.
	Refusing(ctx context.Context, tx pgx.Tx, org string, tokens []*invocation.Token) ([]*invocation.Refusal, error)
}

// errNoRefusals refuses to record what a token asked for with a Store made
// without Refusals (New rather than NewRecording): its revocations would
// go unchecked.
var errNoRefusals = errors.New("invocationstore: recording invocations asked for by tokens needs a Store made with NewRecording")

// refusals returns, for each of ps, the revocation in effect that refuses
// the token that asked for it, nil where none does or no token asked: a
// token revoked in another API process and not refused here yet (that
// process refreshes every auth.revocation_refresh), or revoked while its
// request was past its check. It is looked for in tx by s's Refusals,
// ordered with the revocations' own transactions by a lock, so that a
// token revoked before tx commits is either seen here or, if the
// revocation comes later, withdraws the invocation itself.
func (s *Store) refusals(ctx context.Context, tx pgx.Tx, ps []*invocation.CreateParams) ([]*invocation.Refusal, error) {
	out := make([]*invocation.Refusal, len(ps))
	// The tokens of each organization, each once.
	type key struct {
		org string
		tok invocation.Token
		iat int64
	}
	byOrg := map[string][]*invocation.Token{}
	index := map[key]int{}
	at := make([]int, len(ps))
	for i, p := range ps {
		at[i] = -1
		if p.Token == nil {
			continue
		}
		k := key{org: p.OrganizationID, tok: *p.Token}
		if k.tok.IssuedAt != nil {
			k.iat, k.tok.IssuedAt = k.tok.IssuedAt.UnixNano(), nil
		} else {
			k.iat = -1
		}
		j, ok := index[k]
		if !ok {
			j = len(byOrg[p.OrganizationID])
			index[k] = j
			byOrg[p.OrganizationID] = append(byOrg[p.OrganizationID], p.Token)
		}
		at[i] = j
	}
	if len(byOrg) == 0 {
		return out, nil
	}
	if s.revoked == nil {
		return nil, errNoRefusals
	}
	orgs := make([]string, 0, len(byOrg))
	for org := range byOrg {
		orgs = append(orgs, org)
	}
	slices.Sort(orgs)
	refused := map[string][]*invocation.Refusal{}
	for _, org := range orgs {
		rs, err := s.revoked.Refusing(ctx, tx, org, byOrg[org])
		if err != nil {
			return nil, err
		}
		if len(rs) != len(byOrg[org]) {
			return nil, errors.New("invocationstore: Refusals answered another number of tokens than asked")
		}
		refused[org] = rs
	}
	for i, p := range ps {
		if at[i] >= 0 {
			out[i] = refused[p.OrganizationID][at[i]]
		}
	}
	return out, nil
}

// withdrawRefused withdraws, in tx, each of invs (created from ps) that
// has not ended and whose token a revocation refuses (refused, from
// refusals), as that revocation would have: cancelled with its job, the
// cancelled event naming the revocation, with the revoker as actor (one
// created denied stays denied). It returns the refusal of each recorded
// one whose token is refused, nil for the others.
func (s *Store) withdrawRefused(ctx context.Context, tx pgx.Tx, invs []*invocation.Invocation, refused []*invocation.Refusal) ([]*invocation.Refusal, error) {
	out := make([]*invocation.Refusal, len(invs))
	for i, inv := range invs {
		r := refused[i]
		if inv == nil || r == nil {
			continue
		}
		out[i] = r
		if inv.Status != invocation.StatusPending && inv.Status != invocation.StatusApproved {
			continue
		}
		withdrawn, err := s.Withdraw(ctx, tx, inv.ID, r.RevokedBy, r.Reason)
		if err != nil {
			return nil, err
		}
		invs[i] = &withdrawn
	}
	return out, nil
}
