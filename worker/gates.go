package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/domain/admin/adminstore"
	"github.com/outboxd/outboxd/internal/domain/catalog"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/policy"
)

// gates are checked before every call: a passed must_run_before or a
// do-not-contact match ends the invocation without a call (skip says why;
// see refused); quiet hours make it wait, no longer than until its
// must_run_before. The settings come with the invocation
// (Store.BeginMany), which starts the invocation itself when there are
// none. The job took its bucket's token before the gates: a job they hold
// or skip makes no call and gives the token back (refund).
func (w *ExecuteWorker) gates(ctx context.Context, inv invocation.Invocation, rc invocation.RunContext, source *catalog.Source) (skip string, wait time.Duration, err error) {
	defer func() {
		if skip != "" || wait > 0 || err != nil {
			w.refund(ctx, inv)
		}
	}()
	if inv.MustRunBefore != nil && time.Now().After(*inv.MustRunBefore) {
		return w.refused(ctx, inv, rc, "must_run_before", "must_run_before passed before the action could run")
	}
	if skip, err = doNotContact(ctx, inv, source, rc.DoNotContact); err != nil {
		return "", 0, err
	}
	if skip != "" {
		return w.refused(ctx, inv, rc, "do_not_contact", skip)
	}
	wait, err = quietHours(rc.QuietHours, time.Now(), deref(inv.RateBucket), source.Bucket)
	if wait > 0 {
		if inv.MustRunBefore != nil {
			// Held past its deadline it could only be skipped: it comes
			// back just after the deadline instead, and is skipped then.
			wait = min(wait, time.Until(*inv.MustRunBefore)+time.Second)
		}
		w.deps.Metrics.QuietHoursHolds.Inc()
	}
	return "", wait, err
}

// refused counts a gate's refusal and returns what the invocation
// becomes: skipped for reason, which tells the automation nothing was
// done, unless an earlier execution started and may have acted (a retry
// after a lost answer, a rerun after a crash). That one is failed here, a
// dead letter saying the provider may have acted, as an attempt that
// ended without an outcome is, and err cancels its job.
func (w *ExecuteWorker) refused(ctx context.Context, inv invocation.Invocation, rc invocation.RunContext, gate, reason string) (skip string, wait time.Duration, err error) {
	w.deps.Metrics.GateSkips.WithLabelValues(gate).Inc()
	if !rc.StartedBefore {
		return reason, 0, nil
	}
	e := &executors.Error{
		Code: "outcome_unknown",
		Message: reason + "; an earlier attempt started without recording an outcome, so the provider " +
			"may have acted: check it before replaying",
	}
	msg, err := w.recordFailure(context.WithoutCancel(ctx), inv, nil, e, nil)
	if err != nil {
		return "", 0, err
	}
	w.logger.WarnContext(ctx, "invocation failed: a gate refused it after an earlier attempt started", "invocation_id", inv.ID,
		"organization_id", inv.OrganizationID, "source_id", inv.Integration, "action_id", inv.Action,
		"status", invocation.StatusFailed, "gate", gate, "error", msg)
	return "", 0, river.JobCancel(errors.New(msg))
}

// doNotContact returns why an invocation must be skipped when one of its
// action's recipient fields matches a do-not-contact pattern, and ""
// otherwise.
func doNotContact(ctx context.Context, inv invocation.Invocation, source executors.Source, patterns []string) (string, error) {
	if len(patterns) == 0 {
		return "", nil
	}
	defs, err := source.ListActions(ctx, executors.ExecContext{OrganizationID: inv.OrganizationID})
	if err != nil {
		return "", fmt.Errorf("listing actions for the do-not-contact check: %w", err)
	}
	var params map[string]any
	if err := json.Unmarshal(inv.Params, &params); err != nil {
		return "", nil
	}
	for _, d := range defs {
		if d.ID != inv.Action {
			continue
		}
		for _, field := range d.Recipients {
			value, ok := params[field].(string)
			if !ok {
				continue
			}
			if pattern, hit := policy.MatchRecipient(patterns, value); hit {
				return fmt.Sprintf("do-not-contact: %s %q matches %q", field, value, pattern), nil
			}
		}
	}
	return "", nil
}

// quietHours returns how long until every quiet window containing now has
// ended (0 outside them): the windows of every bucket ("") and of the
// buckets named, the invocation's and its source's own (an envelope may
// name another bucket than its source's; its source's quiet hours still
// hold it).
func quietHours(raw []byte, now time.Time, buckets ...string) (time.Duration, error) {
	var windows []struct {
		Bucket   string `json:"bucket"`
		TimeZone string `json:"time_zone"`
		Start    int    `json:"start"`
		End      int    `json:"end"`
	}
	if err := json.Unmarshal(raw, &windows); err != nil {
		return 0, fmt.Errorf("reading quiet hours: %w", err)
	}
	var wait time.Duration
	for _, qw := range windows {
		if qw.Bucket != "" && !slices.Contains(buckets, qw.Bucket) {
			continue
		}
		d, err := policy.QuietWindow{TimeZone: qw.TimeZone, Start: qw.Start, End: qw.End}.Wait(now)
		if err != nil {
			return 0, err
		}
		wait = max(wait, d)
	}
	return wait, nil
}

// metaPausedAt is the River metadata key naming the organization pause
// (its paused_at) that held a job. Resuming that pause makes the jobs it
// held available at once (adminstore's DeletePause), and so does the pause
// watch for a job snoozed after the resume (watchPause); a job that runs
// again unpaused sets it to null.
const metaPausedAt = "org_paused_at"

// hold snoozes a job of a paused organization for Config.PauseRecheck
// without calling anything or spending an attempt, and marks it as held
// by the pause that began at pausedAt.
func (w *ExecuteWorker) hold(ctx context.Context, org string, pausedAt time.Time) error {
	if err := river.MetadataSet(ctx, metaPausedAt, pausedAt); err != nil {
		return err
	}
	w.deps.Metrics.PauseHolds.Inc()
	w.logger.DebugContext(ctx, "organization paused; holding the job", "organization_id", org, "paused_at", pausedAt, "recheck", w.cfg.PauseRecheck)
	w.watchPause(ctx, adminstore.Held{Org: org, PausedAt: pausedAt})
	return river.JobSnooze(w.cfg.PauseRecheck)
}

// pauseWatchEvery is how often the pause watch asks whether the pauses
// that held jobs here lately have ended: the longest a job held as its
// pause ended waits, instead of Config.PauseRecheck.
const pauseWatchEvery = 2 * time.Second

// pauseWatch releases the jobs a resume missed. Resuming releases the
// jobs whose metadata names the pause, but River writes a hold's snooze
// after the worker returns: a job the worker was holding as the resume
// committed is snoozed after the release, and would wait PauseRecheck.
// So each pause that held a job of this worker is watched for
// PauseRecheck after its last hold here (by then every job it held here
// is due anyway): every pauseWatchEvery, one statement asks which of the
// watched pauses have ended, and the jobs an ended one still holds are
// released as its resume released the others. A worker that holds nothing
// watches nothing: the watch starts with a hold and stops when its last
// pause is PauseRecheck old, or when the worker's River client stops.
type pauseWatch struct {
	mu sync.Mutex
	// held is when each watched pause last held a job here.
	held    map[adminstore.Held]time.Time
	running bool
}

// watchPause watches pause, which held a job here now, starting the
// worker's watch if it was not running. The watch runs on Deps.Pool, as
// long as the River client running the job (in ctx): none runs for a
// worker on a test's transaction (Deps.DB), whose jobs the pool cannot
// see, or outside a client.
func (w *ExecuteWorker) watchPause(ctx context.Context, pause adminstore.Held) {
	if w.deps.Pool == nil || w.deps.DB != nil {
		return
	}
	client, err := river.ClientFromContextSafely[pgx.Tx](ctx)
	if err != nil || client.Stopped() == nil {
		return
	}
	pause.PausedAt = pause.PausedAt.UTC() // one key per instant
	pw := &w.pauses
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if pw.held == nil {
		pw.held = map[adminstore.Held]time.Time{}
	}
	pw.held[pause] = time.Now()
	if !pw.running {
		pw.running = true
		go w.runPauseWatch(pw, client.Stopped())
	}
}

// runPauseWatch releases, every pauseWatchEvery, what the watched pauses
// that ended still hold, until none is watched or stopped is closed.
func (w *ExecuteWorker) runPauseWatch(pw *pauseWatch, stopped <-chan struct{}) {
	tick := time.NewTicker(pauseWatchEvery)
	defer tick.Stop()
	for {
		select {
		case <-stopped:
			w.watched(pw, true)
			return
		case <-tick.C:
		}
		pauses := w.watched(pw, false)
		if len(pauses) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), w.cfg.JobTimeout())
		w.releaseEnded(ctx, pauses)
		cancel()
	}
}

// watched returns the pauses pw still watches, forgetting those that
// last held a job here more than PauseRecheck ago, or all of them when
// stop; with none left, the watch stops.
func (w *ExecuteWorker) watched(pw *pauseWatch, stop bool) []adminstore.Held {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	var out []adminstore.Held
	for pause, last := range pw.held {
		if stop || time.Since(last) > w.cfg.PauseRecheck+pauseWatchEvery {
			delete(pw.held, pause)
			continue
		}
		out = append(out, pause)
	}
	if len(out) == 0 {
		pw.running = false
	}
	return out
}

// releaseEnded releases the jobs that those of pauses that ended still
// hold.
func (w *ExecuteWorker) releaseEnded(ctx context.Context, pauses []adminstore.Held) {
	ended, err := w.pauseStore.Ended(ctx, w.deps.Pool, pauses)
	if err != nil {
		w.logger.WarnContext(ctx, "pause watch: reading the pauses", "error", err)
		return
	}
	for _, pause := range ended {
		n, err := w.pauseStore.ReleaseHeld(ctx, w.deps.Pool, pause)
		if err != nil {
			w.logger.WarnContext(ctx, "pause watch: releasing held jobs", "organization_id", pause.Org, "paused_at", pause.PausedAt, "error", err)
			continue
		}
		if n > 0 {
			w.logger.InfoContext(ctx, "released jobs held as their organization's pause ended", "organization_id", pause.Org,
				"paused_at", pause.PausedAt, "jobs", n)
		}
	}
}

// heldBefore reports whether a pause held the job on an earlier run.
func heldBefore(metadata []byte) bool {
	if !bytes.Contains(metadata, []byte(`"`+metaPausedAt+`"`)) {
		return false
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(metadata, &m); err != nil {
		return false
	}
	v, ok := m[metaPausedAt]
	return ok && string(v) != "null"
}

// pausedSince returns when org's current pause began, nil when it is not
// paused.
func (w *ExecuteWorker) pausedSince(ctx context.Context, org string) (*time.Time, error) {
	if org == "" {
		return nil, nil
	}
	at, err := w.store.PausedSince(ctx, w.deps.db(), org)
	if err != nil {
		return nil, fmt.Errorf("reading the organization's pause: %w", err)
	}
	return at, nil
}
