package invocationstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/platform/dbsqlc"
	"github.com/outboxd/outboxd/internal/platform/tracing"
)

// EditParams is an approver's edit of a pending invocation's params
// (package intent).
type EditParams struct {
	Actor string
	// Params are the new params, redacted; Sealed the exact ones sealed
	// for the invocation, nil when redaction changed nothing.
	Params json.RawMessage
	Sealed []byte
	// Edit is the intent.Edit appended to the invocation's edits, in JSON.
	Edit json.RawMessage
	// IntentDigest and Intent are the intent with the new params.
	IntentDigest string
	Intent       json.RawMessage
	// Reason is the timeline entry's text.
	Reason string
}

// Edit changes a pending invocation's params, keeping the original ones,
// and records the edit and an edited event. It stays pending; its preview
// is rendered again (previewAgain).
func (s *Store) Edit(ctx context.Context, tx pgx.Tx, id uuid.UUID, p *EditParams) (invocation.Invocation, error) {
	client, err := s.jobs(ctx)
	if err != nil {
		return invocation.Invocation{}, err
	}
	r, err := s.q.InvocationEdit(ctx, tx, dbsqlc.InvocationEditParams{
		ID: id, Params: p.Params, ParamsSealed: p.Sealed, Edit: p.Edit,
		IntentDigest: &p.IntentDigest, Intent: p.Intent, Actor: &p.Actor, Reason: nilIfEmpty(p.Reason),
	})
	inv, err := transitioned(r, err, id, "editing")
	if err != nil {
		return inv, err
	}
	if _, err := client.InsertManyTx(ctx, tx, []river.InsertManyParams{previewJob(inv.ID, inv.OrganizationID, inv.TraceContext)}); err != nil {
		return inv, fmt.Errorf("inserting the preview job of an edit: %w", err)
	}
	return inv, s.previewAgain(ctx, tx, inv.ID)
}

// previewJob is the render_preview job of a pending invocation (package
// preview), inserted with what parks it: at its creation, and after an
// edit or a re-ask changed what will run.
func previewJob(id uuid.UUID, org, traceContext string) river.InsertManyParams {
	return river.InsertManyParams{Args: invocation.PreviewArgs{InvocationID: id, OrganizationID: org},
		InsertOpts: &river.InsertOpts{Metadata: tracing.JobMetadata(traceContext)}}
}

// previewAgain drops the preview of an invocation whose params or intent
// changed, in the transaction that changed them and queued its new
// preview job: until that job renders, it has none (as at its creation),
// never the preview of what will not run.
func (s *Store) previewAgain(ctx context.Context, tx pgx.Tx, id uuid.UUID) error {
	if err := s.q.PreviewDelete(ctx, tx, id); err != nil {
		return fmt.Errorf("dropping the preview of %s: %w", id, err)
	}
	return nil
}

// IntentChangedParams is what a worker found changed since the approval
// of an invocation, before its call.
type IntentChangedParams struct {
	// ExpiresAt closes the new approval window.
	ExpiresAt    time.Time
	IntentDigest string
	Intent       json.RawMessage
	Changes      []string
	// StartedBefore keeps started_at: an earlier execution had started.
	StartedBefore bool
	// Reason is the timeline entry's text.
	Reason string
	// Mode is the invocation's mode from now on; "" keeps it.
	Mode string
}

// IntentChanged returns an approved (or executing, not yet called)
// invocation to pending: a new parked job, expiry job and preview job
// (its preview dropped until then), the intent as it is now and an
// intent_changed event, a new request for approval. The caller's job is
// left to end without a call.
func (s *Store) IntentChanged(ctx context.Context, tx pgx.Tx, inv invocation.Invocation, p *IntentChangedParams) (invocation.Invocation, error) {
	client, err := s.jobs(ctx)
	if err != nil {
		return inv, err
	}
	args, opts := executeJob(inv.ID, inv.OrganizationID, inv.Integration, deref(inv.RateBucket), inv.Retry, true, inv.TraceContext)
	res, err := client.InsertManyTx(ctx, tx, []river.InsertManyParams{
		{Args: args, InsertOpts: opts},
		{Args: invocation.ExpireArgs{InvocationID: inv.ID, OrganizationID: inv.OrganizationID}, InsertOpts: &river.InsertOpts{
			ScheduledAt: p.ExpiresAt, Metadata: tracing.JobMetadata(inv.TraceContext),
		}},
		previewJob(inv.ID, inv.OrganizationID, inv.TraceContext),
	})
	if err != nil {
		return inv, fmt.Errorf("inserting the jobs of a new approval request: %w", err)
	}
	r, err := s.q.InvocationIntentChanged(ctx, tx, dbsqlc.InvocationIntentChangedParams{
		ID: inv.ID, ExpiresAt: &p.ExpiresAt, JobID: &res[0].Job.ID, IntentDigest: nilIfEmpty(p.IntentDigest), Intent: p.Intent,
		Changes: p.Changes, StartedBefore: p.StartedBefore, Reason: nilIfEmpty(p.Reason), Mode: nilIfEmpty(p.Mode),
	})
	again, err := transitioned(r, err, inv.ID, "asking again")
	if err != nil {
		return again, err
	}
	return again, s.previewAgain(ctx, tx, inv.ID)
}

// Rekey stores a pending invocation's intent made again with the primary
// secrets key (package intent), in the approval's transaction.
func (s *Store) Rekey(ctx context.Context, tx pgx.Tx, id uuid.UUID, digest string, raw json.RawMessage) error {
	return s.q.InvocationIntentRekey(ctx, tx, dbsqlc.InvocationIntentRekeyParams{ID: id, IntentDigest: &digest, Intent: raw})
}
