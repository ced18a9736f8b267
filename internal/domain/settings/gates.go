package settings

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/domain/audit"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/settings/settingsstore"
	"github.com/outboxd/outboxd/policy"
)

// QuietHoursWindow is a quiet window: no job of the bucket starts between
// Start and End ("HH:MM") in TimeZone (an IANA name).
type QuietHoursWindow struct {
	// Bucket limits the window to one rate bucket; "" is every job of the org.
	Bucket   string
	TimeZone string
	Start    string
	End      string
}

// windowRecord is a quiet window as the audit trail records it.
type windowRecord struct {
	Bucket   string `json:"bucket"`
	TimeZone string `json:"time_zone"`
	Start    string `json:"start"`
	End      string `json:"end"`
}

func windowRecords(windows []QuietHoursWindow) any {
	out := make([]windowRecord, len(windows))
	for i, w := range windows {
		out[i] = windowRecord(w)
	}
	return out
}

// GetQuietHours returns the organization's quiet windows.
func (s *Service) GetQuietHours(ctx context.Context, org string) ([]QuietHoursWindow, error) {
	rows, err := s.store.QuietHours(ctx, org)
	if err != nil {
		return nil, fmt.Errorf("loading quiet hours: %w", err)
	}
	return toWindows(rows), nil
}

func toWindows(rows []settingsstore.QuietWindow) []QuietHoursWindow {
	out := make([]QuietHoursWindow, len(rows))
	for i, r := range rows {
		out[i] = QuietHoursWindow{Bucket: r.Bucket, TimeZone: r.TimeZone, Start: policy.FormatClock(r.StartMinute), End: policy.FormatClock(r.EndMinute)}
	}
	return out
}

// PutQuietHours replaces the organization's quiet windows. A non-empty
// ifMatch must name the current windows' ETag.
func (s *Service) PutQuietHours(ctx context.Context, org, by string, windows []QuietHoursWindow, ifMatch string) ([]QuietHoursWindow, error) {
	var fieldErrs []executors.FieldError
	seen := map[string]bool{}
	var rows []settingsstore.QuietWindow
	for i, w := range windows {
		field := fmt.Sprintf("%d", i)
		// "Local" is whatever zone each worker host runs in, not a zone.
		if _, err := time.LoadLocation(w.TimeZone); err != nil || w.TimeZone == "" || w.TimeZone == "Local" {
			fieldErrs = append(fieldErrs, executors.FieldError{Field: field + "/time_zone", Message: fmt.Sprintf("unknown time zone %q (use an IANA name such as Europe/Paris)", w.TimeZone)})
		}
		start, err1 := policy.ParseClock(w.Start)
		end, err2 := policy.ParseClock(w.End)
		if err1 != nil {
			fieldErrs = append(fieldErrs, executors.FieldError{Field: field + "/start", Message: err1.Error()})
		}
		if err2 != nil {
			fieldErrs = append(fieldErrs, executors.FieldError{Field: field + "/end", Message: err2.Error()})
		}
		if w.Bucket != "" && !s.deps.Flow.Accepts(w.Bucket) {
			fieldErrs = append(fieldErrs, executors.FieldError{Field: field + "/bucket", Message: fmt.Sprintf("unknown rate bucket %q", w.Bucket)})
		}
		if seen[w.Bucket] {
			fieldErrs = append(fieldErrs, executors.FieldError{Field: field + "/bucket", Message: "one window per bucket"})
		}
		seen[w.Bucket] = true
		rows = append(rows, settingsstore.QuietWindow{Bucket: w.Bucket, TimeZone: w.TimeZone, StartMinute: start, EndMinute: end})
	}
	if len(fieldErrs) > 0 {
		return nil, &errs.ValidationError{Message: "invalid quiet hours", Fields: fieldErrs}
	}
	out, err := replace(ctx, s, org, by, "quiet_hours", ifMatch,
		audit.Change{Action: "quiet_hours.replace", TargetType: "quiet_hours"}, states(windowRecords),
		func(ctx context.Context, tx pgx.Tx) ([]QuietHoursWindow, error) {
			rows, err := s.store.QuietHoursIn(ctx, tx, org)
			return toWindows(rows), err
		},
		func(ctx context.Context, tx pgx.Tx) error { return s.store.ReplaceQuietHours(ctx, tx, org, by, rows) })
	if err != nil {
		return nil, fmt.Errorf("storing quiet hours: %w", err)
	}
	return out, nil
}

// GetDoNotContact returns the organization's do-not-contact patterns.
func (s *Service) GetDoNotContact(ctx context.Context, org string) ([]string, error) {
	patterns, err := s.store.DoNotContact(ctx, org)
	if err != nil {
		return nil, fmt.Errorf("loading do-not-contact: %w", err)
	}
	if patterns == nil {
		patterns = []string{}
	}
	return patterns, nil
}

// PutDoNotContact replaces the organization's do-not-contact patterns. A
// non-empty ifMatch must name the current patterns' ETag.
func (s *Service) PutDoNotContact(ctx context.Context, org, by string, patterns []string, ifMatch string) ([]string, error) {
	var fieldErrs []executors.FieldError
	for i, p := range patterns {
		if !policy.ValidRecipientPattern(p) || len(p) > 200 {
			fieldErrs = append(fieldErrs, executors.FieldError{Field: fmt.Sprint(i), Message: fmt.Sprintf("%q is not a valid pattern (a glob such as #general or C09*)", p)})
		}
	}
	if len(fieldErrs) > 0 {
		return nil, &errs.ValidationError{Message: "invalid do-not-contact patterns", Fields: fieldErrs}
	}
	trimmed := make([]string, len(patterns))
	for i, p := range patterns {
		trimmed[i] = strings.TrimSpace(p)
	}
	out, err := replace(ctx, s, org, by, "do_not_contact", ifMatch,
		audit.Change{Action: "do_not_contact.replace", TargetType: "do_not_contact"}, states(asIs[[]string]),
		func(ctx context.Context, tx pgx.Tx) ([]string, error) {
			patterns, err := s.store.DoNotContactIn(ctx, tx, org)
			if patterns == nil {
				patterns = []string{}
			}
			return patterns, err
		},
		func(ctx context.Context, tx pgx.Tx) error {
			return s.store.ReplaceDoNotContact(ctx, tx, org, by, trimmed)
		})
	if err != nil {
		return nil, fmt.Errorf("storing do-not-contact: %w", err)
	}
	return out, nil
}
