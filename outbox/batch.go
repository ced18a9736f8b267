package outbox

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"

	"github.com/outboxd/outboxd/internal/domain/catalog"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/platform/batch"
	"github.com/outboxd/outboxd/internal/platform/tracing"
)

// MaxBatch is how many envelopes one batch may hold.
const MaxBatch = 1000

// BatchItem is the outcome of one envelope of a batch: its invocation
// (Created false when its external id already existed), or why it was
// refused. One recorded and withdrawn there, its token revoked, has both:
// its cancelled invocation and an invocation.RevokedError.
type BatchItem struct {
	Invocation invocation.Invocation
	Created    bool
	Err        error
}

// EnqueueBatch enqueues up to MaxBatch envelopes. Each is validated and
// de-duplicated on its own, and a refused one never affects its
// neighbours; the accepted ones are recorded as single envelopes are (see
// record), all in one transaction, their jobs in one bulk insert (when
// that transaction fails, one transaction each, so that a failure is its
// envelope's alone). The answer is in request order.
func (s *Service) EnqueueBatch(ctx context.Context, by *Enqueuer, envs []Envelope) ([]BatchItem, error) {
	if len(envs) == 0 || len(envs) > MaxBatch {
		return nil, errs.Invalid("envelopes", "give between 1 and %d envelopes", MaxBatch)
	}
	ctx, span := s.tracer.Start(ctx, "outboxd.enqueue_batch")
	defer span.End()
	if span.IsRecording() {
		span.SetAttributes(tracing.AttrOrganizationID.String(by.OrganizationID), attribute.Int("outboxd.envelopes", len(envs)))
	}
	items := make([]BatchItem, len(envs))
	var (
		firsts  []*prepared        // the first envelope of each external id
		owners  []int              // item of each first
		first   = map[string]int{} // external id → its index in firsts
		resolve = s.memoResolve()
	)
	for i := range envs {
		r, err := s.envelopeRequest(ctx, by, &envs[i])
		var p *prepared
		if err == nil {
			p, err = s.prepare(ctx, r, resolve)
		}
		if err != nil {
			items[i].Err = err
			continue
		}
		if j, ok := first[r.externalID]; ok {
			if firsts[j].hash != p.hash {
				items[i].Err = errs.IdempotencyMismatch
			}
			continue // filled in from its first below
		}
		first[r.externalID] = len(firsts)
		firsts = append(firsts, p)
		owners = append(owners, i)
	}
	if len(firsts) == 0 {
		return items, nil
	}

	results, err := s.write(ctx, firsts)
	if err != nil {
		// One envelope's failure (a value Postgres refuses, a deadlock
		// over a grant) failed the transaction: write them one at a time,
		// as the group commit of single envelopes does (batch.Isolated),
		// so that it is that envelope's error alone.
		results = make([]batch.Result[*invocation.Invocation], len(firsts))
		for k := range firsts {
			one, err := s.write(ctx, firsts[k:k+1])
			if err != nil {
				results[k].Err = err
				continue
			}
			results[k] = one[0]
		}
	}
	recorded := make([]*invocation.Invocation, len(firsts))
	var held []string // external ids an earlier or concurrent request holds
	for k, res := range results {
		inv := res.Value
		recorded[k] = inv
		if inv != nil {
			// Recorded: created, or withdrawn there as its token is
			// revoked (an invocation.RevokedError, which is its answer).
			items[owners[k]] = BatchItem{Invocation: *inv, Created: true, Err: res.Err}
			s.created(ctx, *inv)
			continue
		}
		if res.Err != nil {
			items[owners[k]].Err = res.Err
			continue
		}
		held = append(held, firsts[k].r.externalID)
	}
	if len(held) > 0 {
		stored, err := s.store.ByExternalIDs(ctx, s.deps.Pool, by.OrganizationID, held)
		if err != nil {
			return nil, err
		}
		for k, inv := range recorded {
			if inv != nil || items[owners[k]].Err != nil {
				continue
			}
			p := firsts[k]
			existing, ok := stored[p.r.externalID]
			if !ok {
				items[owners[k]].Err = fmt.Errorf("external id %s: the invocation that holds it was not found", p.r.externalID)
				continue
			}
			items[owners[k]] = BatchItem{Invocation: existing, Err: sameRequest(existing, p)}
		}
	}
	for i := range items {
		if items[i].Err != nil || items[i].Invocation.ID != uuid.Nil || envs[i].ExternalID == "" {
			continue
		}
		if j, ok := first[envs[i].ExternalID]; ok {
			items[i] = BatchItem{Invocation: items[owners[j]].Invocation, Err: items[owners[j]].Err}
		}
	}
	return items, nil
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
