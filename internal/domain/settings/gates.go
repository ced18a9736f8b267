package settings

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/outboxd/outboxd/executors"
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

// GetQuietHours returns the organization's quiet windows.
func (s *Service) GetQuietHours(ctx context.Context, org string) ([]QuietHoursWindow, error) {
	rows, err := s.store.QuietHours(ctx, org)
	if err != nil {
		return nil, fmt.Errorf("loading quiet hours: %w", err)
	}
	out := make([]QuietHoursWindow, len(rows))
	for i, r := range rows {
		out[i] = QuietHoursWindow{Bucket: r.Bucket, TimeZone: r.TimeZone, Start: policy.FormatClock(r.StartMinute), End: policy.FormatClock(r.EndMinute)}
	}
	return out, nil
}

// PutQuietHours replaces the organization's quiet windows.
func (s *Service) PutQuietHours(ctx context.Context, org, by string, windows []QuietHoursWindow) ([]QuietHoursWindow, error) {
	var fieldErrs []executors.FieldError
	seen := map[string]bool{}
	var rows []settingsstore.QuietWindow
	for i, w := range windows {
		field := fmt.Sprintf("%d", i)
		if _, err := time.LoadLocation(w.TimeZone); err != nil || w.TimeZone == "" {
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
	if err := s.store.ReplaceQuietHours(ctx, org, by, rows); err != nil {
		return nil, fmt.Errorf("storing quiet hours: %w", err)
	}
	return s.GetQuietHours(ctx, org)
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

// PutDoNotContact replaces the organization's do-not-contact patterns.
func (s *Service) PutDoNotContact(ctx context.Context, org, by string, patterns []string) ([]string, error) {
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
	if err := s.store.ReplaceDoNotContact(ctx, org, by, trimmed); err != nil {
		return nil, fmt.Errorf("storing do-not-contact: %w", err)
	}
	return s.GetDoNotContact(ctx, org)
}
