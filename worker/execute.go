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
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/catalog"
	"github.com/outboxd/outboxd/internal/credential"
	"github.com/outboxd/outboxd/internal/dbsqlc"
	"github.com/outboxd/outboxd/internal/dbutil"
	"github.com/outboxd/outboxd/policy"
)

// ExecuteArgs runs one invocation. The job row is the outbox row: it is
// inserted in the transaction that records the invocation.
type ExecuteArgs struct {
	InvocationID uuid.UUID `json:"invocation_id"`
	// Retry overrides the worker's backoff for this job (its source's or its
	// envelope's policy). Max attempts travel as the job's max_attempts.
	Retry *Retry `json:"retry,omitempty"`
}

// Retry is a retry policy: how many attempts and the backoff bounds. Zero
// fields fall back to the worker's configuration.
type Retry struct {
	MaxAttempts int           `json:"max_attempts,omitempty"`
	BaseDelay   time.Duration `json:"base_delay,omitempty"`
	MaxDelay    time.Duration `json:"max_delay,omitempty"`
}

// Merge returns r with the fields of over that are set.
func (r Retry) Merge(over Retry) Retry {
	if over.MaxAttempts > 0 {
		r.MaxAttempts = over.MaxAttempts
	}
	if over.BaseDelay > 0 {
		r.BaseDelay = over.BaseDelay
	}
	if over.MaxDelay > 0 {
		r.MaxDelay = over.MaxDelay
	}
	return r
}

// InsertOpts returns the insert options of an execute job with this retry
// policy; pending parks it for approval.
func (r *Retry) InsertOpts(pending bool) *river.InsertOpts {
	opts := &river.InsertOpts{Pending: pending}
	if r != nil {
		opts.MaxAttempts = r.MaxAttempts
	}
	return opts
}

// Kind implements river.JobArgs.
func (ExecuteArgs) Kind() string { return "execute_action" }

// InsertOpts puts execute jobs on the actions queue.
func (ExecuteArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: QueueActions} }

// ExecuteWorker calls the provider for an approved invocation and records the
// outcome.
type ExecuteWorker struct {
	river.WorkerDefaults[ExecuteArgs]
	deps    *Deps
	cfg     *Config
	logger  *slog.Logger
	queries *dbsqlc.Queries
}

// Work implements river.Worker.
func (w *ExecuteWorker) Work(ctx context.Context, job *river.Job[ExecuteArgs]) error {
	// Bookkeeping after the call must land even when the job's context was
	// cancelled (shutdown, timeout), or the outcome would be lost.
	bg := context.WithoutCancel(ctx)

	inv, err := w.queries.InvocationGetByID(ctx, w.deps.Pool, job.Args.InvocationID)
	if errors.Is(err, pgx.ErrNoRows) {
		return river.JobCancel(fmt.Errorf("invocation %s does not exist", job.Args.InvocationID))
	}
	if err != nil {
		return fmt.Errorf("loading invocation: %w", err)
	}
	if inv.Status != StatusApproved && inv.Status != StatusExecuting {
		return nil // terminal, or never released: nothing to do
	}
	log := w.logger.With("invocation_id", inv.ID, "organization_id", inv.OrganizationID,
		"source_id", inv.Integration, "action_id", inv.Action, "attempt", job.Attempt)

	source, err := w.deps.Sources.Source(ctx, inv.OrganizationID, inv.Integration)
	if err != nil {
		if errors.Is(err, catalog.ErrNotFound) {
			return w.fail(bg, job, inv, nil, &executors.Error{Code: "unknown_source", Message: "source " + inv.Integration + " is not available (removed or disabled)"}, "")
		}
		return fmt.Errorf("resolving source: %w", err)
	}

	skip, wait, err := w.gates(ctx, inv, source)
	switch {
	case err != nil:
		return err
	case skip != "":
		log.Info("invocation skipped", "status", StatusSkipped, "reason", skip)
		return w.finish(bg, job, inv, StatusSkipped, func(tx pgx.Tx) (dbsqlc.ActionInvocation, error) {
			return w.queries.InvocationSkip(bg, tx, dbsqlc.InvocationSkipParams{ID: inv.ID, Error: &skip})
		})
	case wait > 0:
		log.Info("quiet hours; snoozing until the window ends", "wait", wait)
		return river.JobSnooze(wait)
	}

	tokenWait, release, err := w.takeToken(ctx, inv, job.ID)
	if err != nil {
		return fmt.Errorf("acquiring rate bucket: %w", err)
	}
	if tokenWait > 0 {
		return river.JobSnooze(tokenWait)
	}
	defer release()

	inv, err = w.queries.InvocationMarkExecuting(ctx, w.deps.Pool, dbsqlc.InvocationMarkExecutingParams{ID: inv.ID, Attempt: int32(job.Attempt)})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // cancelled or expired since it was loaded
	}
	if err != nil {
		return fmt.Errorf("marking invocation executing: %w", err)
	}

	req := credential.Request{Org: inv.OrganizationID, Integration: inv.Integration, UserID: deref(inv.UserID)}
	var tok credential.Token
	if needsCredential(source) {
		if tok, err = w.deps.Tokens.Token(ctx, req, false); err != nil {
			return w.tokenFailure(bg, job, inv, err, log)
		}
	}

	start := time.Now()
	res, err := w.call(ctx, source, inv, tok)
	if unauthorized(err) {
		// The provider rejected the credential: refresh it once and retry.
		log.Info("provider rejected the credential; refreshing the token and retrying once")
		tok, err = w.deps.Tokens.Token(ctx, req, true)
		if err != nil {
			return w.tokenFailure(bg, job, inv, err, log)
		}
		res, err = w.call(ctx, source, inv, tok)
		if unauthorized(err) {
			err = &executors.Error{Code: executors.CodeUnauthorized, Message: "the provider rejected the credential again after a refresh: " + executors.Classify(err).Message}
		}
	}
	elapsed := time.Since(start)
	duration := ptr(int32(elapsed.Milliseconds()))
	if err != nil {
		w.deps.Metrics.JobDuration.WithLabelValues(inv.Integration, "error").Observe(elapsed.Seconds())
		return w.retryOrFail(bg, job, inv, duration, executors.Classify(err), tok.Value, log)
	}
	w.deps.Metrics.JobDuration.WithLabelValues(inv.Integration, "success").Observe(elapsed.Seconds())

	result := policy.Truncate(policy.Redact(orNull(res.Data)), policy.MaxStoredBytes)
	err = w.finish(bg, job, inv, StatusCompleted, func(tx pgx.Tx) (dbsqlc.ActionInvocation, error) {
		return w.queries.InvocationComplete(bg, tx, dbsqlc.InvocationCompleteParams{
			ID: inv.ID, Result: result, ProviderRef: nilIfEmpty(res.ProviderRef), Conflict: res.Conflict, DurationMs: duration,
		})
	})
	if err == nil {
		log.Info("invocation completed", "status", StatusCompleted, "duration_ms", *duration, "conflict", res.Conflict)
	}
	return err
}

// needsCredential is false for sources that say their calls take none (a
// connector without auth).
func needsCredential(s executors.Source) bool {
	r, ok := s.(interface{ RequiresCredential() bool })
	return !ok || r.RequiresCredential()
}

func unauthorized(err error) bool {
	return err != nil && executors.Classify(err).Code == executors.CodeUnauthorized
}

// call runs the action with the call deadline.
func (w *ExecuteWorker) call(ctx context.Context, source executors.Source, inv dbsqlc.ActionInvocation, tok credential.Token) (executors.Result, error) {
	params := inv.Params
	if inv.ParamsSealed != nil {
		exact, err := w.deps.Box.Open(inv.ParamsSealed, inv.ID[:])
		if err != nil {
			return executors.Result{}, &executors.Error{Code: "params_unreadable", Message: "the sealed params do not open with secrets.key"}
		}
		params = exact
	}
	ctx, cancel := context.WithTimeout(ctx, w.cfg.CallTimeout)
	defer cancel()
	return source.Execute(ctx, inv.Action, params, executors.ExecContext{
		Token:          tok.Value,
		TokenKind:      tok.Kind,
		OrganizationID: inv.OrganizationID,
		SessionID:      deref(inv.SessionID),
		IdempotencyKey: inv.ID.String(),
	})
}

// tokenFailure classifies a failure to resolve the credential.
func (w *ExecuteWorker) tokenFailure(ctx context.Context, job *river.Job[ExecuteArgs], inv dbsqlc.ActionInvocation, err error, log *slog.Logger) error {
	switch {
	case errors.Is(err, credential.ErrNotFound):
		return w.fail(ctx, job, inv, nil, &executors.Error{Code: "credential_missing", Message: "no credential is stored for " + inv.Integration}, "")
	case errors.Is(err, credential.ErrUnreadable):
		return w.fail(ctx, job, inv, nil, &executors.Error{Code: "credential_unreadable", Message: err.Error()}, "")
	case errors.Is(err, credential.ErrInactive):
		return w.fail(ctx, job, inv, nil, &executors.Error{Code: "integration_inactive", Message: err.Error()}, "")
	case errors.Is(err, credential.ErrRefused):
		return w.fail(ctx, job, inv, nil, &executors.Error{Code: "credential_unavailable", Message: err.Error()}, "")
	}
	return w.retryOrFail(ctx, job, inv, nil, executors.Classify(fmt.Errorf("resolving credential: %w", err)), "", log)
}

// retryOrFail decides what a failed call becomes: a snooze when the provider
// asked us to wait, a retry while attempts remain, otherwise failed.
func (w *ExecuteWorker) retryOrFail(ctx context.Context, job *river.Job[ExecuteArgs], inv dbsqlc.ActionInvocation, duration *int32, e *executors.Error, token string, log *slog.Logger) error {
	msg := policy.RedactString(e.Error(), token)
	if e.RetryAfter > 0 {
		w.drain(ctx, inv, e.RetryAfter)
	}
	switch {
	case !e.Retryable:
		return w.fail(ctx, job, inv, duration, e, token)
	case e.RetryAfter > 0 && int(inv.ProviderWaits) < w.cfg.MaxProviderWaits:
		if err := w.queries.InvocationRecordProviderWait(ctx, w.deps.Pool, dbsqlc.InvocationRecordProviderWaitParams{ID: inv.ID, Error: &msg, DurationMs: duration}); err != nil {
			return fmt.Errorf("recording snooze: %w", err)
		}
		log.Info("provider asked to wait; snoozing and draining the bucket", "retry_after", e.RetryAfter, "error", msg)
		return river.JobSnooze(e.RetryAfter)
	case job.Attempt >= job.MaxAttempts:
		// River discards the job when this error comes back: the dead letter.
		if _, err := w.recordFailure(ctx, inv, duration, e, token); err != nil {
			return err
		}
		log.Warn("invocation failed after last attempt", "status", StatusFailed, "error", msg)
		return errors.New(msg)
	default:
		if err := w.queries.InvocationRecordRetry(ctx, w.deps.Pool, dbsqlc.InvocationRecordRetryParams{ID: inv.ID, Error: &msg, DurationMs: duration}); err != nil {
			return fmt.Errorf("recording retry: %w", err)
		}
		log.Info("retryable failure; will retry", "error", msg)
		return errors.New(msg)
	}
}

// fail records a non-retryable failure, notifies waiters and cancels the job
// so River never runs it again.
func (w *ExecuteWorker) fail(ctx context.Context, job *river.Job[ExecuteArgs], inv dbsqlc.ActionInvocation, duration *int32, e *executors.Error, token string) error {
	msg, err := w.recordFailure(ctx, inv, duration, e, token)
	if err != nil {
		return err
	}
	return river.JobCancel(errors.New(msg))
}

// recordFailure marks the invocation failed (a dead letter) and notifies
// waiters in one transaction, and returns the redacted error message.
func (w *ExecuteWorker) recordFailure(ctx context.Context, inv dbsqlc.ActionInvocation, duration *int32, e *executors.Error, token string) (string, error) {
	msg := policy.RedactString(e.Error(), token)
	err := dbutil.WithTx(ctx, w.deps.Pool, func(ctx context.Context, tx pgx.Tx) error {
		_, err := w.queries.InvocationFail(ctx, tx, dbsqlc.InvocationFailParams{ID: inv.ID, Error: &msg, DurationMs: duration})
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("recording failure: %w", err)
		}
		return notify(ctx, tx, inv.ID)
	})
	if err != nil {
		return "", err
	}
	w.deps.Metrics.InvocationStatus(inv.Mode, StatusFailed)
	return msg, nil
}

// finish records a final state with update, completes the job and notifies
// waiters, all in one transaction.
func (w *ExecuteWorker) finish(ctx context.Context, job *river.Job[ExecuteArgs], inv dbsqlc.ActionInvocation, status string, update func(tx pgx.Tx) (dbsqlc.ActionInvocation, error)) error {
	err := dbutil.WithTx(ctx, w.deps.Pool, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := update(tx); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return nil // someone else finished it; the job just completes
			}
			return fmt.Errorf("recording %s: %w", status, err)
		}
		if _, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job); err != nil {
			return fmt.Errorf("completing job: %w", err)
		}
		return notify(ctx, tx, inv.ID)
	})
	if err != nil {
		return err
	}
	w.deps.Metrics.InvocationStatus(inv.Mode, status)
	return nil
}

func notify(ctx context.Context, tx pgx.Tx, id uuid.UUID) error {
	_, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, NotifyChannel, id.String())
	return err
}

func ptr[T any](v T) *T { return &v }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func orNull(b []byte) []byte {
	if len(b) == 0 {
		return []byte("null")
	}
	return b
}
