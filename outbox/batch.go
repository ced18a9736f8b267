package outbox

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outboxd/outboxd/internal/catalog"
	"github.com/outboxd/outboxd/internal/dbsqlc"
	"github.com/outboxd/outboxd/internal/dbutil"
	"github.com/outboxd/outboxd/internal/invocation"
)

// MaxBatch is how many envelopes one batch may hold.
const MaxBatch = 1000

// BatchItem is the outcome of one envelope of a batch: its invocation
// (Created false when its external id already existed), or why it was
// refused.
type BatchItem struct {
	Invocation invocation.Invocation
	Created    bool
	Err        error
}

// EnqueueBatch enqueues up to MaxBatch envelopes. Each is validated and
// de-duplicated on its own, and a refused one never affects its
// neighbours; the accepted ones are recorded in one transaction, their
// jobs in one bulk insert. Reads before it: one for existing external ids,
// one for the mode overrides. The answer is in request order.
func (s *Service) EnqueueBatch(ctx context.Context, by *Enqueuer, envs []Envelope) ([]BatchItem, error) {
	if len(envs) == 0 || len(envs) > MaxBatch {
		return nil, invalid("envelopes", "give between 1 and %d envelopes", MaxBatch)
	}
	items := make([]BatchItem, len(envs))
	preps := make([]*prepared, len(envs))
	resolve := s.memoResolve()
	var externalIDs []string
	for i := range envs {
		r, err := s.envelopeRequest(by, &envs[i])
		if err == nil {
			preps[i], err = s.prepare(ctx, r, resolve)
		}
		if err != nil {
			items[i].Err = err
			continue
		}
		externalIDs = append(externalIDs, r.externalID)
	}
	if len(externalIDs) == 0 {
		return items, nil
	}

	stored, err := s.store.ByExternalIDs(ctx, s.deps.Pool, by.OrganizationID, externalIDs)
	if err != nil {
		return nil, err
	}
	modes, err := s.callerModes(ctx, by.OrganizationID, by.AutomationID)
	if err != nil {
		return nil, err
	}

	var (
		creates []*invocation.CreateParams
		owners  []int              // item of each create
		first   = map[string]int{} // external id → first item in this batch
	)
	for i, p := range preps {
		if p == nil {
			continue
		}
		if inv, ok := stored[p.r.externalID]; ok {
			items[i].Invocation = inv
			if inv.ParamsHash != p.hash {
				items[i].Err = ErrIdempotencyMismatch
			}
			continue
		}
		if j, ok := first[p.r.externalID]; ok {
			if preps[j].hash != p.hash {
				items[i].Err = ErrIdempotencyMismatch
			}
			continue // filled in from item j below
		}
		first[p.r.externalID] = i
		key := p.r.source + ":" + p.r.action
		creates = append(creates, s.plan(p, modes["org/"+key], modes["automation/"+key]))
		owners = append(owners, i)
	}

	var created []*invocation.Invocation
	if len(creates) > 0 {
		created, err = dbutil.WithTxV(ctx, s.deps.Pool, func(ctx context.Context, tx pgx.Tx) ([]*invocation.Invocation, error) {
			return s.store.CreateMany(ctx, tx, creates)
		})
		if err != nil {
			return nil, err
		}
	}
	for k, inv := range created {
		i := owners[k]
		if inv == nil {
			// A concurrent request took the external id meanwhile.
			existing, _, err := s.existing(ctx, s.deps.Pool, preps[i].r, preps[i].hash)
			items[i] = BatchItem{Invocation: existing, Err: err}
			continue
		}
		items[i] = BatchItem{Invocation: *inv, Created: true}
		s.created(*inv)
	}
	for i, p := range preps {
		if p == nil || items[i].Err != nil || items[i].Invocation.ID != uuid.Nil {
			continue
		}
		j := first[p.r.externalID]
		items[i] = BatchItem{Invocation: items[j].Invocation, Err: items[j].Err}
	}
	return items, nil
}

// callerModes loads every mode override that can apply to a caller, keyed
// "org/<source>:<action>" and "automation/<source>:<action>".
func (s *Service) callerModes(ctx context.Context, org, automationID string) (map[string]string, error) {
	rows, err := s.queries.ModeListForCaller(ctx, s.deps.Pool, dbsqlc.ModeListForCallerParams{OrganizationID: org, AutomationID: automationID})
	if err != nil {
		return nil, fmt.Errorf("loading mode overrides: %w", err)
	}
	modes := make(map[string]string, len(rows))
	for _, r := range rows {
		modes[r.Scope+"/"+r.SourceID+":"+r.ActionID] = r.Mode
	}
	return modes, nil
}

// memoResolve returns resolveAction remembering its answers, so a batch of
// envelopes for one action resolves it once.
func (s *Service) memoResolve() actionResolver {
	type answer struct {
		action catalog.Action
		err    error
	}
	seen := map[string]answer{}
	return func(ctx context.Context, org, sourceID, actionID string) (catalog.Action, error) {
		key := sourceID + "\x00" + actionID
		a, ok := seen[key]
		if !ok {
			a.action, a.err = s.resolveAction(ctx, org, sourceID, actionID)
			seen[key] = a
		}
		return a.action, a.err
	}
}
