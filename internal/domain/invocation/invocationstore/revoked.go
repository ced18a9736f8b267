package invocationstore

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/revocation/revocationstore"
)

// refusals returns, for each of ps, the revocation in effect that refuses
// the token that asked for it, nil where none does or no token asked: a
// token revoked in another API process and not refused here yet (that
// process refreshes every auth.revocation_refresh), or revoked while its
// request was past its check. It is looked for in tx, ordered with the
// revocations' own transactions by a lock (revocationstore.Refusing), so
// that a token revoked before tx commits is either seen here or, if the
// revocation comes later, withdraws the invocation itself.
func refusals(ctx context.Context, tx pgx.Tx, ps []*invocation.CreateParams) ([]*revocationstore.Revocation, error) {
	out := make([]*revocationstore.Revocation, len(ps))
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
	orgs := make([]string, 0, len(byOrg))
	for org := range byOrg {
		orgs = append(orgs, org)
	}
	slices.Sort(orgs)
	refused := map[string][]*revocationstore.Revocation{}
	for _, org := range orgs {
		rs, err := revocationstore.Refusing(ctx, tx, org, byOrg[org])
		if err != nil {
			return nil, err
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
// cancelled event naming the revocation, with the revoker as actor.
func (s *Store) withdrawRefused(ctx context.Context, tx pgx.Tx, invs []*invocation.Invocation, refused []*revocationstore.Revocation) error {
	for i, inv := range invs {
		r := refused[i]
		if inv == nil || r == nil || (inv.Status != invocation.StatusPending && inv.Status != invocation.StatusApproved) {
			continue
		}
		withdrawn, err := s.Withdraw(ctx, tx, inv.ID, r.RevokedBy, r.WithdrawalReason())
		if err != nil {
			return err
		}
		invs[i] = &withdrawn
	}
	return nil
}
