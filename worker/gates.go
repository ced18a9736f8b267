package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/dbsqlc"
	"github.com/outboxd/outboxd/policy"
)

// gates are checked before every call: a passed must_run_before or a
// do-not-contact match skips the invocation (skip says why); quiet hours
// make it wait.
func (w *ExecuteWorker) gates(ctx context.Context, inv dbsqlc.ActionInvocation, source executors.Source) (skip string, wait time.Duration, err error) {
	if inv.MustRunBefore != nil && time.Now().After(*inv.MustRunBefore) {
		return "must_run_before passed before the action could run", 0, nil
	}
	if skip, err = w.doNotContact(ctx, inv, source); skip != "" || err != nil {
		return skip, 0, err
	}
	wait, err = w.quietHours(ctx, inv, deref(inv.RateBucket))
	return "", wait, err
}

// doNotContact returns why an invocation must be skipped when one of its
// action's recipient fields matches the organization's do-not-contact
// list, and "" otherwise.
func (w *ExecuteWorker) doNotContact(ctx context.Context, inv dbsqlc.ActionInvocation, source executors.Source) (string, error) {
	patterns, err := w.queries.DoNotContactList(ctx, w.deps.Pool, inv.OrganizationID)
	if err != nil || len(patterns) == 0 {
		return "", err
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

// quietHours returns how long the invocation must wait for the quiet
// windows of its organization and bucket to end (0 outside them).
func (w *ExecuteWorker) quietHours(ctx context.Context, inv dbsqlc.ActionInvocation, bucket string) (time.Duration, error) {
	windows, err := w.queries.QuietHoursForJob(ctx, w.deps.Pool, dbsqlc.QuietHoursForJobParams{OrganizationID: inv.OrganizationID, Bucket: bucket})
	if err != nil {
		return 0, fmt.Errorf("loading quiet hours: %w", err)
	}
	var wait time.Duration
	now := time.Now()
	for _, qw := range windows {
		d, err := policy.QuietWindow{TimeZone: qw.TimeZone, Start: int(qw.StartMinute), End: int(qw.EndMinute)}.Wait(now)
		if err != nil {
			return 0, err
		}
		wait = max(wait, d)
	}
	return wait, nil
}
