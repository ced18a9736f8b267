package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/invocation/invocationstore"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/internal/platform/telemetry"
	"github.com/outboxd/outboxd/outbox/outboxstore"
)

// ExpireWorker expires an invocation nobody approved in time.
type ExpireWorker struct {
	river.WorkerDefaults[invocation.ExpireArgs]
	deps   *Deps
	logger *slog.Logger
	store  *invocationstore.Store // takes River's client from the job's context
}

// Work implements river.Worker.
func (w *ExpireWorker) Work(ctx context.Context, job *river.Job[invocation.ExpireArgs]) error {
	var wait time.Duration
	err := dbutil.WithTx(ctx, w.deps.db(), func(ctx context.Context, tx pgx.Tx) error {
		inv, err := w.store.GetByID(ctx, tx, job.Args.InvocationID)
		if errors.Is(err, errs.NotFound) || (err == nil && inv.Status != invocation.StatusPending) {
			return nil
		}
		if err != nil {
			return err
		}
		if inv.ExpiresAt != nil && inv.ExpiresAt.After(w.deps.now()) {
			wait = inv.ExpiresAt.Sub(w.deps.now())
			return nil
		}
		return expire(ctx, tx, w.store, w.deps.Metrics, w.logger, inv)
	})
	if err != nil {
		return err
	}
	if wait > 0 {
		return river.JobSnooze(wait)
	}
	return nil
}

// expire closes a pending invocation's approval window; one that left
// pending meanwhile (approved, denied) is left as it is.
func expire(ctx context.Context, tx pgx.Tx, store *invocationstore.Store, metrics *telemetry.Metrics, logger *slog.Logger, inv invocation.Invocation) error {
	_, err := store.Expire(ctx, tx, inv)
	if errors.Is(err, errs.Conflict) {
		return nil
	}
	if err != nil {
		return err
	}
	metrics.InvocationStatus(inv.Mode, string(invocation.StatusExpired))
	logger.InfoContext(ctx, "invocation expired", "invocation_id", inv.ID, "organization_id", inv.OrganizationID,
		"source_id", inv.Integration, "action_id", inv.Action, "status", invocation.StatusExpired)
	return nil
}

// SweepArgs is the periodic safety net: it expires every pending invocation
// past its expiry whose own expiry job did not run, fails those River gave
// up on without an outcome (failOrphans), and drops old invoke-rate
// windows.
type SweepArgs struct{}

// Kind implements river.JobArgs.
func (SweepArgs) Kind() string { return "expire_sweep" }

// SweepWorker works SweepArgs.
type SweepWorker struct {
	river.WorkerDefaults[SweepArgs]
	deps   *Deps
	logger *slog.Logger
	store  *invocationstore.Store
}

// sweepBatch bounds one sweep transaction.
const sweepBatch = 500

// Work implements river.Worker.
func (w *SweepWorker) Work(ctx context.Context, job *river.Job[SweepArgs]) error {
	n, err := Sweep(ctx, w.deps.db(), w.store, w.deps.Metrics, w.logger)
	if err != nil {
		return err
	}
	if n > 0 {
		w.logger.InfoContext(ctx, "expiry sweep expired invocations", "count", n)
	}
	if err := outboxstore.New().InvokeRateDeleteBefore(ctx, w.deps.db(), time.Now().Add(-10*time.Minute)); err != nil {
		return fmt.Errorf("dropping old invoke-rate windows: %w", err)
	}
	return nil
}

// orphansQuery lists, up to $2, the invocations still approved or executing
// whose current job River discarded: attempts that ended without the worker
// recording an outcome. River's rescuer discards a job out of attempts
// whose process died mid-attempt (a deploy, an OOM kill during the last
// attempt), and River discards one whose last attempt returned before
// retryOrFail (Postgres unreachable before the call) or panicked. Starting
// from the discarded jobs reads River's (state, finalized_at) index, and
// only dead letters are discarded. acted says whether an execution had
// started and may have acted (as InvocationBeginMany's started_before).
const orphansQuery = `SELECT a.id, (a.started_at IS NOT NULL AND NOT a.nothing_done) AS acted
FROM river_job AS j
JOIN action_invocations AS a ON a.id = (j.args->>'invocation_id')::uuid AND a.job_id = j.id
WHERE j.state = 'discarded' AND j.finalized_at IS NOT NULL AND j.kind = $1
  AND a.status IN ('approved', 'executing')
LIMIT $2`

// orphanError is the error recorded on an orphaned invocation an
// execution started.
var orphanError = (&executors.Error{
	Code: "attempts_exhausted",
	Message: "the last attempt ended without recording an outcome (its worker was stopped or failed mid-attempt); " +
		"the provider may have acted: check it before replaying",
}).Error()

// unstartedOrphanError is the error recorded on an orphaned invocation no
// execution started (or whose only refusals did nothing): its attempts
// ended before the call (the database unreachable, a source's action list
// unavailable to the do-not-contact check).
var unstartedOrphanError = (&executors.Error{
	Code: "attempts_exhausted",
	Message: "the job ran out of attempts without recording an outcome, before any attempt reached the provider: " +
		"nothing was done, it can be replayed",
}).Error()

// failOrphans fails (dead-letters) the invocations River gave up on without
// an outcome (orphansQuery), so none stays approved or executing forever
// out of reach of replay, and returns how many it failed.
func failOrphans(ctx context.Context, db dbutil.DB, store *invocationstore.Store, metrics *telemetry.Metrics, logger *slog.Logger) (int, error) {
	rows, err := db.Query(ctx, orphansQuery, invocation.ExecuteArgs{}.Kind(), sweepBatch)
	if err != nil {
		return 0, fmt.Errorf("listing orphaned invocations: %w", err)
	}
	type orphan struct {
		ID    uuid.UUID
		Acted bool
	}
	orphans, err := pgx.CollectRows(rows, pgx.RowToStructByPos[orphan])
	if err != nil {
		return 0, fmt.Errorf("listing orphaned invocations: %w", err)
	}
	n := 0
	for _, o := range orphans {
		msg := orphanError
		if !o.Acted {
			msg = unstartedOrphanError
		}
		inv, err := store.Fail(ctx, db, o.ID, msg, nil)
		if errors.Is(err, errs.Conflict) {
			continue // finished meanwhile
		}
		if err != nil {
			return n, err
		}
		n++
		metrics.InvocationStatus(inv.Mode, string(invocation.StatusFailed))
		logger.WarnContext(ctx, "invocation failed: its job ran out of attempts without an outcome", "invocation_id", inv.ID,
			"organization_id", inv.OrganizationID, "source_id", inv.Integration, "action_id", inv.Action, "status", invocation.StatusFailed)
	}
	return n, nil
}

// Sweep expires pending invocations past their expiry, in batches, and
// returns how many it expired; then it fails the invocations River gave up
// on without an outcome (failOrphans).
func Sweep(ctx context.Context, pool dbutil.Beginner, store *invocationstore.Store, metrics *telemetry.Metrics, logger *slog.Logger) (int, error) {
	total := 0
	for {
		n, err := dbutil.WithTxV(ctx, pool, func(ctx context.Context, tx pgx.Tx) (int, error) {
			invs, err := store.ListExpired(ctx, tx, sweepBatch)
			if err != nil {
				return 0, err
			}
			for _, inv := range invs {
				if err := expire(ctx, tx, store, metrics, logger, inv); err != nil {
					return 0, err
				}
			}
			return len(invs), nil
		})
		total += n
		if err != nil {
			return total, err
		}
		if n < sweepBatch {
			break
		}
	}
	_, err := dbutil.WithTxV(ctx, pool, func(ctx context.Context, tx pgx.Tx) (int, error) {
		return failOrphans(ctx, tx, store, metrics, logger)
	})
	return total, err
}
