package settings

import (
	"context"
	"fmt"
	"strings"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/settings/settingsstore"
	"github.com/outboxd/outboxd/policy"
)

// GetModes returns the overrides of the org (automationID "") or of one
// automation.
func (s *Service) GetModes(ctx context.Context, org, automationID string) (policy.Modes, error) {
	scope, scopeID := modeScope(org, automationID)
	rows, err := s.store.Modes(ctx, org, scope, scopeID)
	if err != nil {
		return nil, fmt.Errorf("listing modes: %w", err)
	}
	modes := make(policy.Modes, len(rows))
	for _, r := range rows {
		modes[r.SourceID+":"+r.ActionID] = r.Mode
	}
	return modes, nil
}

// maxModeKeyBytes bounds an action-mode key; its parts are indexed.
const maxModeKeyBytes = 255

// PutModes replaces the overrides of the org or of one automation.
func (s *Service) PutModes(ctx context.Context, org, automationID, userID string, raw map[string]string) (policy.Modes, error) {
	var fieldErrs []executors.FieldError
	entries := make([]settingsstore.Mode, 0, len(raw))
	for key, value := range raw {
		i := strings.LastIndex(key, ":")
		if i <= 0 || i == len(key)-1 || len(key) > maxModeKeyBytes {
			fieldErrs = append(fieldErrs, executors.FieldError{Field: key, Message: fmt.Sprintf(`key must be "<source>:<action>", at most %d bytes`, maxModeKeyBytes)})
			continue
		}
		mode, ok := policy.ParseMode(value)
		if !ok {
			fieldErrs = append(fieldErrs, executors.FieldError{Field: key, Message: fmt.Sprintf("invalid mode %q: use allow, deny or require_approval", value)})
			continue
		}
		entries = append(entries, settingsstore.Mode{SourceID: key[:i], ActionID: key[i+1:], Mode: mode})
	}
	if len(fieldErrs) > 0 {
		return nil, &errs.ValidationError{Message: "invalid action modes", Fields: fieldErrs}
	}
	scope, scopeID := modeScope(org, automationID)
	if err := s.store.ReplaceModes(ctx, org, scope, scopeID, userID, entries); err != nil {
		return nil, fmt.Errorf("storing modes: %w", err)
	}
	return s.GetModes(ctx, org, automationID)
}

func modeScope(org, automationID string) (string, string) {
	if automationID != "" {
		return "automation", automationID
	}
	return "org", org
}
