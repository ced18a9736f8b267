package audit

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxd/outboxd/internal/domain/audit/auditstore"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
)

// ActionPrune is the action of the entry retention appends to a chain
// whose oldest entries it deleted.
const ActionPrune = "audit.prune"

// Pruner deletes the oldest entries of a chain for retention
// (internal/domain/retention), through the owner's connections.
type Pruner struct {
	svc *Service
}

// NewPruner returns a Pruner.
func NewPruner() *Pruner {
	return &Pruner{svc: &Service{store: auditstore.New(), now: time.Now}}
}

// Orgs lists the organizations that have entries.
func (p *Pruner) Orgs(ctx context.Context, db dbutil.DB) ([]string, error) {
	orgs, err := p.svc.store.Orgs(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("listing organizations with audit entries: %w", err)
	}
	return orgs, nil
}

// PruneTx deletes, in tx, the front of org's chain: at most limit of its
// oldest entries, up to the first that is not older than cutoff (entries
// go from the front only, so that what is kept is one unbroken chain). In
// the same transaction it moves the organization's anchor past them and
// appends an audit.prune entry saying so, whose actor is retention
// (KindInternal). It returns how many entries it deleted; 0 changes
// nothing.
func (p *Pruner) PruneTx(ctx context.Context, tx pgx.Tx, org string, cutoff time.Time, limit int) (int64, error) {
	store := p.svc.store
	if err := store.LockChain(ctx, tx, org); err != nil {
		return 0, fmt.Errorf("locking the audit chain: %w", err)
	}
	front, err := store.Oldest(ctx, tx, org, limit)
	if err != nil {
		return 0, fmt.Errorf("reading the oldest audit entries: %w", err)
	}
	n := 0
	for n < len(front) && front[n].OccurredAt.Before(cutoff) {
		n++
	}
	if n == 0 {
		return 0, nil
	}
	last := front[n-1]
	a := &auditstore.Anchor{
		Org: org, PrunedThrough: last.Seq, PrevHash: last.Hash,
		PrunedBefore: cutoff.UTC(), PrunedAt: p.svc.now().UTC().Truncate(time.Microsecond),
	}
	deleted, err := store.Prune(ctx, tx, a, int64(n))
	if err != nil {
		return 0, fmt.Errorf("deleting old audit entries: %w", err)
	}
	err = p.svc.RecordTx(ctx, tx, &Change{
		Org: org, Actor: &Actor{Subject: "retention", Kind: KindInternal},
		Action: ActionPrune, TargetType: "audit", TargetID: "",
		Before: map[string]any{"first_seq": front[0].Seq},
		After: map[string]any{
			"first_seq": last.Seq + 1, "prev_hash": last.Hash, "deleted": deleted,
			"older_than": a.PrunedBefore.Format(time.RFC3339Nano),
		},
	})
	if err != nil {
		return 0, err
	}
	return deleted, nil
}
