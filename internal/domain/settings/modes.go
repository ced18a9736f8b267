package settings

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/platform/dbsqlc"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/policy"
)

// GetModes returns the overrides of the org (automationID "") or of one
// automation.
func (s *Service) GetModes(ctx context.Context, org, automationID string) (policy.Modes, error) {
	scope, scopeID := modeScope(org, automationID)
	rows, err := s.queries.ModeList(ctx, s.deps.Pool, dbsqlc.ModeListParams{OrganizationID: org, Scope: scope, ScopeID: scopeID})
	if err != nil {
		return nil, fmt.Errorf("listing modes: %w", err)
	}
	modes := make(policy.Modes, len(rows))
	for _, r := range rows {
		modes[r.SourceID+":"+r.ActionID] = policy.Mode(r.Mode)
	}
	return modes, nil
}

// maxModeKeyBytes bounds an action-mode key; its parts are indexed.
const maxModeKeyBytes = 255

// PutModes replaces the overrides of the org or of one automation.
func (s *Service) PutModes(ctx context.Context, org, automationID, userID string, raw map[string]string) (policy.Modes, error) {
	var fieldErrs []executors.FieldError
	type entry struct{ source, action, mode string }
	entries := make([]entry, 0, len(raw))
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
		entries = append(entries, entry{key[:i], key[i+1:], string(mode)})
	}
	if len(fieldErrs) > 0 {
		return nil, &errs.ValidationError{Message: "invalid action modes", Fields: fieldErrs}
	}
	scope, scopeID := modeScope(org, automationID)
	err := dbutil.WithTx(ctx, s.deps.Pool, func(ctx context.Context, tx pgx.Tx) error {
		if err := s.queries.ModeDeleteScope(ctx, tx, dbsqlc.ModeDeleteScopeParams{OrganizationID: org, Scope: scope, ScopeID: scopeID}); err != nil {
			return err
		}
		for _, e := range entries {
			err := s.queries.ModeUpsert(ctx, tx, dbsqlc.ModeUpsertParams{
				OrganizationID: org, Scope: scope, ScopeID: scopeID, SourceID: e.source, ActionID: e.action, Mode: e.mode, UpdatedBy: userID,
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
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
