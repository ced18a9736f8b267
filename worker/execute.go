package worker

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"github.com/sethvargo/go-retry"
	"go.opentelemetry.io/otel/trace"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/domain/admin/adminstore"
	"github.com/outboxd/outboxd/internal/domain/credential"
	"github.com/outboxd/outboxd/internal/domain/credential/credentialstore"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/grant/grantstore"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/internal/domain/invocation/invocationstore"
	"github.com/outboxd/outboxd/internal/platform/batch"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/internal/platform/keyed"
	"github.com/outboxd/outboxd/internal/platform/tracing"
	"github.com/outboxd/outboxd/policy"
)

// ExecuteWorker calls the provider for an approved invocation and records the
// outcome.
type ExecuteWorker struct {
	river.WorkerDefaults[invocation.ExecuteArgs]
	deps   *Deps
	cfg    *Config
	logger *slog.Logger
	store  *invocationstore.Store
	// grants reads the grant that let an invocation through (grantLapsed).
	grants *grantstore.Store
	// starter and completer group the first and the last statement of the
	// jobs beginning (finishing) at the same moment: one statement for the
	// group's starts, one for its completions.
	starter   batch.Group[invocation.BeginArgs, invocation.Begun]
	completer batch.Group[invocation.Completion, struct{}]
	tracer    tracing.Tracer
	// orgs holds each organization's share of the workers.
	orgs *keyed.Limiter
	// pauses releases the jobs a resume missed (gates.go), reading the
	// pauses and releasing what they held through pauseStore.
	pauses     pauseWatch
	pauseStore *adminstore.Store
}

// orgSlotWait is how long a job whose organization has all its workers
// busy (Config.MaxOrgWorkers) waits for one of them, holding its own
// worker, and orgBusyWait how long it is then snoozed, at least (plus up
// to as much again of jitter). The wait is for the jobs of a backlog,
// which River fetches a thousand at a time and which mostly end within
// milliseconds: snoozed at once, they would go round the queue again and
// again. A job that finds no worker in that time gives its own up, as
// when the organization's calls hang: its connectors and databases (any
// number, each with a bucket of its own) would otherwise hold every
// worker for the call's whole deadline. Another organization's job waits
// at most orgSlotWait for a worker such a job holds.
const (
	orgSlotWait = 250 * time.Millisecond
	orgBusyWait = time.Second
)

// tracerName names the spans of the workers.
const tracerName = "github.com/outboxd/outboxd/worker"

// NextRetry implements river.Worker: exponential backoff with jitter
// within the job's own retry policy (its source's or envelope's), else
// the worker's.
func (w *ExecuteWorker) NextRetry(job *river.Job[invocation.ExecuteArgs]) time.Time {
	base, maxDelay := w.cfg.RetryBaseDelay, w.cfg.RetryMaxDelay
	if r := job.Args.Retry; r != nil {
		base, maxDelay = cmp.Or(r.BaseDelay, base), cmp.Or(r.MaxDelay, maxDelay)
	}
	return time.Now().Add(backoff(base, max(base, maxDelay), job.Attempt))
}

// Work implements river.Worker.
func (w *ExecuteWorker) Work(ctx context.Context, job *river.Job[invocation.ExecuteArgs]) error {
	// Bookkeeping after the call must land even when the job's context was
	// cancelled (shutdown, timeout), or the outcome would be lost.
	bg := context.WithoutCancel(ctx)

	// The bucket's token comes first, so that one statement can then both
	// read the invocation and mark it executing.
	ref := job.Args.Bucket
	if ref == nil { // a job enqueued before jobs named their bucket
		inv, err := w.store.GetByID(ctx, w.deps.db(), job.Args.InvocationID)
		if errors.Is(err, errs.NotFound) {
			return river.JobCancel(err)
		}
		if err != nil {
			return err
		}
		ref = &invocation.BucketRef{Name: deref(inv.RateBucket), Org: inv.OrganizationID, Source: inv.Integration}
	}
	// A job an earlier pause held asks whether its organization is still
	// paused before it takes a token: held again, it costs its bucket
	// nothing.
	if heldBefore(job.Metadata) {
		if pausedAt, err := w.pausedSince(ctx, ref.Org); err != nil || pausedAt != nil {
			if err != nil {
				return err
			}
			return w.hold(ctx, ref.Org, *pausedAt)
		}
		if err := river.MetadataSet(ctx, metaPausedAt, nil); err != nil {
			return err
		}
	}
	// The organization's share of this process's workers: at it, the job
	// waits its turn without holding a worker, spending an attempt or
	// taking a token.
	orgRelease, ok := w.orgs.Try(ctx, ref.Org, orgSlotWait)
	if !ok {
		return river.JobSnooze(orgBusyWait + rand.N(orgBusyWait))
	}
	defer orgRelease()
	tokenWait, release, err := w.takeToken(ctx, ref, job.ID)
	if err != nil {
		return fmt.Errorf("acquiring rate bucket: %w", err)
	}
	if tokenWait > 0 {
		return river.JobSnooze(tokenWait)
	}
	defer release()

	begun, err := w.starter.Do(ctx, invocation.BeginArgs{ID: job.Args.InvocationID, Attempt: job.Attempt})
	inv, rc, started := begun.Invocation, begun.Run, begun.Started
	if errors.Is(err, errs.NotFound) {
		return river.JobCancel(err)
	}
	if err != nil {
		return err
	}
	if inv.Status != invocation.StatusApproved && inv.Status != invocation.StatusExecuting {
		w.refund(bg, inv) // no call was made with the token
		return nil        // terminal, or never released: nothing to do
	}
	log := w.logger.With("invocation_id", inv.ID, "organization_id", inv.OrganizationID,
		"source_id", inv.Integration, "action_id", inv.Action, "attempt", job.Attempt)
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		// The job's span (otelriver's): which invocation it runs.
		span.SetAttributes(tracing.AttrInvocationID.String(inv.ID.String()), tracing.AttrOrganizationID.String(inv.OrganizationID),
			tracing.AttrSourceID.String(inv.Integration), tracing.AttrActionID.String(inv.Action),
			tracing.AttrMode.String(inv.Mode), tracing.AttrAttempt.Int(job.Attempt))
		// The job runs in the trace that created it; the approval that
		// released it, in a trace of its own, is linked.
		if sc := tracing.Parse(inv.ApprovalTraceContext); sc.IsValid() {
			span.AddLink(trace.Link{SpanContext: sc})
		}
	}

	source, err := w.deps.Sources.Source(ctx, inv.OrganizationID, inv.Integration)
	if err != nil {
		if errors.Is(err, errs.NotFound) {
			return w.fail(bg, job, inv, nil, &executors.Error{Code: "unknown_source", Message: "source " + inv.Integration + " is not available (removed or disabled)"}, nil)
		}
		return fmt.Errorf("resolving source: %w", err)
	}

	if !started && rc.PausedAt != nil {
		w.refund(bg, inv)
		return w.hold(ctx, inv.OrganizationID, *rc.PausedAt)
	}
	if !started {
		skip, wait, err := w.gates(ctx, inv, rc, source)
		switch {
		case err != nil:
			return err
		case skip != "":
			log.InfoContext(ctx, "invocation skipped", "status", invocation.StatusSkipped, "reason", skip)
			return w.finish(bg, inv, invocation.StatusSkipped, func(ctx context.Context) error {
				_, err := w.store.Skip(ctx, w.deps.db(), inv.ID, skip)
				return err
			})
		case wait > 0:
			log.InfoContext(ctx, "quiet hours; snoozing until the window ends", "wait", wait)
			return river.JobSnooze(wait)
		}
		inv, err = w.store.Start(ctx, w.deps.db(), inv.ID, job.Attempt)
		if errors.Is(err, errs.Conflict) {
			return nil // cancelled or expired since it was loaded
		}
		if err != nil {
			return fmt.Errorf("marking invocation executing: %w", err)
		}
	}

	req := credential.Request{
		Org: inv.OrganizationID, Integration: inv.Integration, UserID: deref(inv.UserID),
		Version: rc.CredentialVersion, Local: source.LocalCredential,
	}
	var tok credential.Token
	if source.NeedsCredential {
		if tok, err = w.deps.Tokens.Token(ctx, req, false); err != nil {
			return w.tokenFailure(bg, job, inv, err, log)
		}
	}

	// What a human approved must be what runs, and a grant revoked lets
	// nothing more through: otherwise a human is asked and nothing is
	// called.
	if asked, err := w.grantLapsed(ctx, inv, rc, source, tok, log); err != nil || asked {
		return err
	}
	if asked, err := w.intentChanged(ctx, inv, rc, source, tok, log); err != nil || asked {
		return err
	}
	params, perr := w.exactParams(inv)
	if perr != nil {
		return w.fail(bg, job, inv, nil, perr, w.deps.Secrets)
	}
	start := time.Now()
	// Every credential value this job used, the exact values of its
	// secret-named params and outboxd's own secrets are scrubbed from what
	// it stores and logs, whatever key or text a provider echoes them in.
	secrets := append([]string{tok.Value}, w.deps.Secrets...)
	if inv.ParamsSealed != nil {
		secrets = append(secrets, policy.SecretValues(params)...)
	}
	// An earlier execution may have reached the provider: sources without
	// an idempotency key look for their earlier work before creating.
	retry := rc.StartedBefore
	var missed unreconciled
	resume := resumeFor(ctx, job)
	res, err := w.call(ctx, source, inv, params, tok, retry, missed.add, resume)
	if unauthorized(err) {
		// The provider rejected the credential: refresh it once and retry.
		log.InfoContext(ctx, "provider rejected the credential; refreshing the token and retrying once")
		tok, err = w.deps.Tokens.Token(ctx, req, true)
		secrets = append(secrets, tok.Value)
		if err != nil {
			return w.tokenFailure(bg, job, inv, err, log)
		}
		res, err = w.call(ctx, source, inv, params, tok, retry, missed.add, resume)
		if unauthorized(err) {
			err = &executors.Error{Code: executors.CodeUnauthorized, Message: "the provider rejected the credential again after a refresh: " + executors.Classify(err).Message}
		}
	}
	elapsed := time.Since(start)
	w.noteUnreconciled(bg, inv, req, missed.list(), log)
	duration := ptr(int32(elapsed.Milliseconds()))
	if err != nil {
		w.deps.Metrics.JobDuration.WithLabelValues(inv.Integration, "error").Observe(elapsed.Seconds())
		return w.retryOrFail(bg, job, inv, duration, executors.Classify(err), secrets, log)
	}
	w.deps.Metrics.JobDuration.WithLabelValues(inv.Integration, "success").Observe(elapsed.Seconds())

	result := policy.Truncate(policy.Redact(orNull(res.Data), secrets...), policy.MaxStoredBytes)
	err = w.finish(bg, inv, invocation.StatusCompleted, func(ctx context.Context) error {
		_, err := w.completer.Do(ctx, invocation.Completion{ID: inv.ID, Outcome: &invocation.Outcome{
			Result: result, ProviderRef: res.ProviderRef, Conflict: res.Conflict, DurationMs: duration,
			Steps: redactSteps(res.Steps, secrets),
		}})
		return err
	})
	if err == nil {
		log.InfoContext(ctx, "invocation completed", "status", invocation.StatusCompleted, "duration_ms", *duration, "conflict", res.Conflict)
	}
	return err
}

func unauthorized(err error) bool {
	return err != nil && executors.Classify(err).Code == executors.CodeUnauthorized
}

// unreconciled collects what a source reports through
// ExecContext.Unreconciled during a job's calls.
type unreconciled struct {
	mu   sync.Mutex
	seen []executors.Unreconciled
}

func (u *unreconciled) add(x executors.Unreconciled) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if !slices.Contains(u.seen, x) {
		u.seen = append(u.seen, x)
	}
}

func (u *unreconciled) list() []executors.Unreconciled {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.seen)
}

// noteUnreconciled counts each look-up a source could not make before
// acting again and, when the credential was the cause, notes it on the
// credential, where its status is shown; the first such note of a
// credential is also logged. Failing to note is logged, not fatal: the
// call already happened.
func (w *ExecuteWorker) noteUnreconciled(ctx context.Context, inv invocation.Invocation, req credential.Request, missed []executors.Unreconciled, log *slog.Logger) {
	for _, u := range missed {
		w.deps.Metrics.Unreconciled.WithLabelValues(inv.Integration, u.Reason).Inc()
		if u.CredentialNote == "" {
			log.InfoContext(ctx, "acted again without looking for an earlier attempt's effect", "reason", u.Reason)
			continue
		}
		changed, err := credentialstore.Note(ctx, w.deps.db(), req, u.CredentialNote)
		switch {
		case err != nil:
			log.WarnContext(ctx, "noting the credential failed", "note", u.CredentialNote, "error", err)
		case changed:
			log.WarnContext(ctx, "the credential cannot look for an earlier attempt's effect; retries act again without that check",
				"reason", u.Reason, "note", u.CredentialNote)
		}
	}
}

// exactParams returns the params the provider gets: the sealed exact ones
// when redaction changed the stored params.
func (w *ExecuteWorker) exactParams(inv invocation.Invocation) (json.RawMessage, *executors.Error) {
	if inv.ParamsSealed == nil {
		return inv.Params, nil
	}
	exact, err := w.deps.Box.Open(inv.ParamsSealed, inv.ID[:])
	if err != nil {
		return nil, &executors.Error{Code: "params_unreadable", Message: "the sealed params do not open with secrets.key"}
	}
	return exact, nil
}

// call runs the action with the call deadline.
func (w *ExecuteWorker) call(ctx context.Context, source executors.Source, inv invocation.Invocation, params json.RawMessage, tok credential.Token, retry bool, missed func(executors.Unreconciled), resume executors.Resume) (res executors.Result, err error) {
	ctx, cancel := context.WithTimeout(ctx, w.cfg.CallTimeout)
	defer cancel()
	// The call's span: the parent of the provider's HTTP requests.
	ctx, span := w.tracer.Start(ctx, "outboxd.call")
	defer span.End()
	if span.IsRecording() {
		span.SetAttributes(tracing.AttrInvocationID.String(inv.ID.String()),
			tracing.AttrSourceID.String(inv.Integration), tracing.AttrActionID.String(inv.Action))
		defer func() {
			if err != nil {
				tracing.Fail(span, executors.Classify(err).Code)
			}
		}()
	}
	return source.Execute(ctx, inv.Action, params, executors.ExecContext{
		Token:          tok.Value,
		TokenKind:      tok.Kind,
		OrganizationID: inv.OrganizationID,
		SessionID:      deref(inv.SessionID),
		IdempotencyKey: inv.ID.String(),
		Retry:          retry,
		FirstStartedAt: deref(inv.StartedAt),
		Unreconciled:   missed,
		Resume:         resume,
	})
}

// metaResume is the River metadata key of what a source saved of its
// progress (executors.Resume), with the attempt and the job's snooze count
// of the run that saved it.
const metaResume = "outboxd_resume"

type savedResume struct {
	Attempt int             `json:"attempt"`
	Snoozes int64           `json:"snoozes"`
	State   json.RawMessage `json:"state"`
}

// resumeFor is the executors.Resume of a run of job that calls its source:
// what the run before saved, when it saved it in this attempt and the job
// snoozed since (River counts a job's snoozes in its metadata), and the
// saving of this run's. What was saved is spent: River merges the run's
// metadata into the job when the run ends, and without a Save of this run
// the next one gets nothing (this run may have acted).
func resumeFor(ctx context.Context, job *river.Job[invocation.ExecuteArgs]) executors.Resume {
	var meta map[string]json.RawMessage
	var snoozes int64
	_ = json.Unmarshal(job.Metadata, &meta)
	_ = json.Unmarshal(meta["snoozes"], &snoozes)
	r := executors.Resume{Save: func(state json.RawMessage) {
		// Outside a River worker there is no job to keep it in.
		_ = river.MetadataSet(ctx, metaResume, savedResume{Attempt: job.Attempt, Snoozes: snoozes, State: state})
	}}
	if saved, ok := meta[metaResume]; ok && string(saved) != "null" {
		_ = river.MetadataSet(ctx, metaResume, nil)
		var s savedResume
		if json.Unmarshal(saved, &s) == nil && s.Attempt == job.Attempt && s.Snoozes < snoozes {
			r.Saved = s.State
		}
	}
	return r
}

// tokenFailure classifies a failure to resolve the credential.
func (w *ExecuteWorker) tokenFailure(ctx context.Context, job *river.Job[invocation.ExecuteArgs], inv invocation.Invocation, err error, log *slog.Logger) error {
	switch {
	case errors.Is(err, errs.NotFound):
		return w.fail(ctx, job, inv, nil, &executors.Error{Code: "credential_missing", Message: "no credential is stored for " + inv.Integration}, nil)
	case errors.Is(err, credential.ErrUnreadable):
		return w.fail(ctx, job, inv, nil, &executors.Error{Code: "credential_unreadable", Message: err.Error()}, nil)
	case errors.Is(err, credential.ErrInactive):
		return w.fail(ctx, job, inv, nil, &executors.Error{Code: "integration_inactive", Message: err.Error()}, nil)
	case errors.Is(err, credential.ErrRefused):
		return w.fail(ctx, job, inv, nil, &executors.Error{Code: "credential_unavailable", Message: err.Error()}, nil)
	}
	return w.retryOrFail(ctx, job, inv, nil, executors.Classify(fmt.Errorf("resolving credential: %w", err)), w.deps.Secrets, log)
}

// retryOrFail decides what a failed call becomes: a snooze when the provider
// asked us to wait, a retry while attempts remain, otherwise failed.
func (w *ExecuteWorker) retryOrFail(ctx context.Context, job *river.Job[invocation.ExecuteArgs], inv invocation.Invocation, duration *int32, e *executors.Error, secrets []string, log *slog.Logger) error {
	tracing.Fail(trace.SpanFromContext(ctx), e.Code)
	msg := policy.ErrorText(e.Error(), secrets...)
	if e.RetryAfter > 0 && !e.OtherLimit {
		w.drain(ctx, inv, e.RetryAfter)
	}
	switch {
	case !e.Retryable:
		return w.fail(ctx, job, inv, duration, e, secrets)
	case e.RetryAfter > 0 && int(inv.ProviderWaits) < w.cfg.MaxProviderWaits:
		if _, err := w.store.Snooze(ctx, w.deps.db(), inv.ID, msg, duration, e.NotDone); err != nil && !errors.Is(err, errs.Conflict) {
			return err
		}
		log.InfoContext(ctx, "provider asked to wait; snoozing and draining the bucket", "retry_after", e.RetryAfter, "error", msg)
		return river.JobSnooze(e.RetryAfter)
	case job.Attempt >= job.MaxAttempts:
		// River discards the job when this error comes back: the dead letter.
		if _, err := w.recordFailure(ctx, inv, duration, e, secrets); err != nil {
			return err
		}
		log.WarnContext(ctx, "invocation failed after its last attempt", "status", invocation.StatusFailed, "error", msg)
		return errors.New(msg)
	default:
		if _, err := w.store.ScheduleRetry(ctx, w.deps.db(), inv.ID, msg, duration, e.NotDone); err != nil && !errors.Is(err, errs.Conflict) {
			return err
		}
		log.InfoContext(ctx, "retryable failure; will retry", "error", msg)
		return errors.New(msg)
	}
}

// fail records a non-retryable failure, notifies waiters and cancels the job
// so River never runs it again.
func (w *ExecuteWorker) fail(ctx context.Context, job *river.Job[invocation.ExecuteArgs], inv invocation.Invocation, duration *int32, e *executors.Error, secrets []string) error {
	msg, err := w.recordFailure(ctx, inv, duration, e, secrets)
	if err != nil {
		return err
	}
	tracing.Fail(trace.SpanFromContext(ctx), e.Code)
	w.logger.WarnContext(ctx, "invocation failed", "invocation_id", inv.ID, "organization_id", inv.OrganizationID,
		"source_id", inv.Integration, "action_id", inv.Action, "status", invocation.StatusFailed, "code", e.Code, "error", msg)
	return river.JobCancel(errors.New(msg))
}

// recordFailure marks the invocation failed (a dead letter) and returns the
// redacted error message. An invocation that left executing meanwhile (a
// cancel won) is left as it is.
func (w *ExecuteWorker) recordFailure(ctx context.Context, inv invocation.Invocation, duration *int32, e *executors.Error, secrets []string) (string, error) {
	ctx, span := w.tracer.Start(ctx, "outboxd.complete")
	defer span.End()
	if span.IsRecording() {
		span.SetAttributes(tracing.AttrInvocationID.String(inv.ID.String()), tracing.AttrStatus.String(string(invocation.StatusFailed)),
			tracing.AttrErrorCode.String(e.Code))
	}
	msg := policy.ErrorText(e.Error(), secrets...)
	changed := false
	err := w.persist(ctx, func(ctx context.Context) error {
		_, err := w.store.FailSteps(ctx, w.deps.db(), inv.ID, msg, duration, redactSteps(e.Steps, secrets))
		if errors.Is(err, errs.Conflict) {
			return nil
		}
		changed = err == nil
		return err
	})
	if err != nil {
		return "", err
	}
	if changed { // not when a cancel won, or an earlier try recorded it
		w.deps.Metrics.InvocationStatus(inv.Mode, string(invocation.StatusFailed))
	}
	return msg, nil
}

// finish records a final state, status, with update. River then
// completes the job; should the process die first, the job runs again and
// finds the invocation finished.
func (w *ExecuteWorker) finish(ctx context.Context, inv invocation.Invocation, status invocation.Status, update func(context.Context) error) error {
	ctx, span := w.tracer.Start(ctx, "outboxd.complete")
	defer span.End()
	if span.IsRecording() {
		span.SetAttributes(tracing.AttrInvocationID.String(inv.ID.String()), tracing.AttrStatus.String(string(status)))
	}
	changed := false
	err := w.persist(ctx, func(ctx context.Context) error {
		err := update(ctx)
		if errors.Is(err, errs.Conflict) {
			// Someone else finished it, or an earlier try of this
			// transaction committed before its answer was lost.
			return nil
		}
		changed = err == nil
		return err
	})
	if err != nil {
		return err
	}
	if changed {
		w.deps.Metrics.InvocationStatus(inv.Mode, string(status))
	}
	return nil
}

// persist runs the bookkeeping of a call that already happened. While
// Postgres is unreachable (a restart, a failover) it tries again with
// backoff for up to Config.BookkeepingRetry rather than failing the job:
// a failed job runs again, and its provider call with it.
func (w *ExecuteWorker) persist(ctx context.Context, fn func(ctx context.Context) error) error {
	backoff := retry.WithMaxDuration(w.cfg.BookkeepingRetry,
		retry.WithCappedDuration(2*time.Second, retry.WithJitterPercent(20, retry.NewExponential(50*time.Millisecond))))
	attempts := 0
	err := retry.Do(ctx, backoff, func(ctx context.Context) error {
		attempts++
		err := fn(ctx)
		if err != nil && dbutil.Unavailable(err) {
			return retry.RetryableError(err)
		}
		return err
	})
	if attempts > 1 && err == nil {
		w.logger.InfoContext(ctx, "recorded an outcome after the database came back", "attempts", attempts)
	}
	return err
}

// redactSteps returns steps with the details of its checks redacted like
// errors, nil for nil.
func redactSteps(steps *executors.Steps, secrets []string) *executors.Steps {
	if steps == nil {
		return nil
	}
	out := *steps
	out.Verification.Checks = make([]executors.Check, len(steps.Verification.Checks))
	for i, c := range steps.Verification.Checks {
		c.Name = policy.RedactString(c.Name, secrets...)
		c.Detail = policy.RedactString(c.Detail, secrets...)
		out.Verification.Checks[i] = c
	}
	return &out
}

func ptr[T any](v T) *T { return &v }

func deref[T any](p *T) T {
	if p == nil {
		return *new(T)
	}
	return *p
}

func orNull(b []byte) []byte {
	if len(b) == 0 {
		return []byte("null")
	}
	return b
}
