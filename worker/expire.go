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

	"github.com/outboxd/outboxd/internal/dbsqlc"
	"github.com/outboxd/outboxd/internal/dbutil"
	"github.com/outboxd/outboxd/internal/telemetry"
)

// ExpireArgs expires one pending invocation at its expires_at. It is
// inserted, scheduled, in the transaction that parks the invocation.
type ExpireArgs struct {
	InvocationID uuid.UUID `json:"invocation_id"`
}

// Kind implements river.JobArgs.
func (ExpireArgs) Kind() string { return "expire_invocation" }

// ExpireWorker expires an invocation nobody approved in time.
type ExpireWorker struct {
	river.WorkerDefaults[ExpireArgs]
	deps   *Deps
	logger *slog.Logger
}

// Work implements river.Worker.
func (w *ExpireWorker) Work(ctx context.Context, job *river.Job[ExpireArgs]) error {
	client := river.ClientFromContext[pgx.Tx](ctx)
	var wait time.Duration
	err := dbutil.WithTx(ctx, w.deps.Pool, func(ctx context.Context, tx pgx.Tx) error {
		inv, err := dbsqlc.New().InvocationGetByIDForUpdate(ctx, tx, job.Args.InvocationID)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && inv.Status != StatusPending) {
			return nil
		}
		if err != nil {
			return err
		}
		if inv.ExpiresAt != nil && time.Until(*inv.ExpiresAt) > 0 {
			wait = time.Until(*inv.ExpiresAt)
			return nil
		}
		_, err = ExpireTx(ctx, tx, client, w.deps.Metrics, inv)
		return err
	})
	if err != nil {
		return err
	}
	if wait > 0 {
		return river.JobSnooze(wait)
	}
	return nil
}

// ExpireTx marks a locked pending invocation expired, cancels its parked job
// and notifies waiters. The caller commits.
func ExpireTx(ctx context.Context, tx pgx.Tx, client *river.Client[pgx.Tx], metrics *telemetry.Metrics, inv dbsqlc.ActionInvocation) (dbsqlc.ActionInvocation, error) {
	expired, err := dbsqlc.New().InvocationExpire(ctx, tx, inv.ID)
	if err != nil {
		return inv, fmt.Errorf("expiring invocation: %w", err)
	}
	if inv.JobID != nil {
		if _, err := client.JobCancelTx(ctx, tx, *inv.JobID); err != nil && !errors.Is(err, river.ErrNotFound) {
			return inv, fmt.Errorf("cancelling parked job: %w", err)
		}
	}
	if err := notify(ctx, tx, inv.ID); err != nil {
		return inv, err
	}
	metrics.InvocationStatus(inv.Mode, StatusExpired)
	return expired, nil
}

// SweepArgs is the periodic safety net: it expires every pending invocation
// past its expiry whose own expiry job did not run, and drops old invoke-rate
// windows.
type SweepArgs struct{}

// Kind implements river.JobArgs.
func (SweepArgs) Kind() string { return "expire_sweep" }

// SweepWorker works SweepArgs.
type SweepWorker struct {
	river.WorkerDefaults[SweepArgs]
	deps   *Deps
	logger *slog.Logger
}

// sweepBatch bounds one sweep transaction.
const sweepBatch = 500

// Work implements river.Worker.
func (w *SweepWorker) Work(ctx context.Context, job *river.Job[SweepArgs]) error {
	n, err := Sweep(ctx, w.deps.Pool, river.ClientFromContext[pgx.Tx](ctx), w.deps.Metrics)
	if err != nil {
		return err
	}
	if n > 0 {
		w.logger.Info("expiry sweep expired invocations", "count", n)
	}
	if err := dbsqlc.New().InvokeRateDeleteBefore(ctx, w.deps.Pool, time.Now().Add(-10*time.Minute)); err != nil {
		return fmt.Errorf("dropping old invoke-rate windows: %w", err)
	}
	return nil
}

// Sweep expires pending invocations past their expiry, in batches, and
// returns how many it expired.
func Sweep(ctx context.Context, pool dbutil.Beginner, client *river.Client[pgx.Tx], metrics *telemetry.Metrics) (int, error) {
	total := 0
	for {
		n, err := dbutil.WithTxV(ctx, pool, func(ctx context.Context, tx pgx.Tx) (int, error) {
			rows, err := dbsqlc.New().InvocationListExpiredForUpdate(ctx, tx, sweepBatch)
			if err != nil {
				return 0, err
			}
			for _, inv := range rows {
				if _, err := ExpireTx(ctx, tx, client, metrics, inv); err != nil {
					return 0, err
				}
			}
			return len(rows), nil
		})
		total += n
		if err != nil || n < sweepBatch {
			return total, err
		}
	}
}
