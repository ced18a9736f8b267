package settings

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/domain/audit"
	"github.com/outboxd/outboxd/internal/domain/auth"
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
	return toModes(rows), nil
}

func toModes(rows []settingsstore.Mode) policy.Modes {
	modes := make(policy.Modes, len(rows))
	for _, r := range rows {
		modes[r.SourceID+":"+r.ActionID] = r.Mode
	}
	return modes
}

// maxModeKeyBytes bounds an action-mode key; its parts are indexed.
const maxModeKeyBytes = 255

// PutModes replaces the overrides of the org or of one automation. A
// non-empty ifMatch must name the current overrides' ETag.
func (s *Service) PutModes(ctx context.Context, org, automationID, userID string, raw map[string]string, ifMatch string) (policy.Modes, error) {
	return s.PutModesOf(ctx, org, automationID, userID, auth.SourceClaim{}, raw, ifMatch)
}

// PutModesOf replaces the overrides of the sources that the sources claim
// allows (every source without a claim) in the org or one automation, and
// keeps the others as they are, in one transaction under the setting's
// lock: a replacement of other sources' overrides made at the same time
// is neither lost nor refused. raw naming a source outside the claim is
// errs.SourceNotAllowed and nothing changes. A non-empty ifMatch must name
// the ETag of every current override, as GetModes returns them. The
// answer is every override after the replacement. The audit trail
// records the overrides of the sources it changed only (modesChange).
func (s *Service) PutModesOf(ctx context.Context, org, automationID, userID string, sources auth.SourceClaim, raw map[string]string, ifMatch string) (policy.Modes, error) {
	for _, key := range slices.Sorted(maps.Keys(raw)) {
		if i := strings.LastIndex(key, ":"); i > 0 && i < len(key)-1 && !sources.Allows(key[:i]) {
			return nil, fmt.Errorf("%w: %s", errs.SourceNotAllowed, key[:i])
		}
	}
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
	target := "org"
	if automationID != "" {
		target = "automation/" + automationID
	}
	modes, err := replace(ctx, s, org, userID, "action_modes:"+scope+":"+scopeID, ifMatch,
		audit.Change{Action: "action_modes.replace", TargetType: "action_modes", TargetID: target}, modesChange(slices.Collect(maps.Keys(raw))),
		func(ctx context.Context, tx pgx.Tx) (policy.Modes, error) {
			rows, err := s.store.ModesIn(ctx, tx, org, scope, scopeID)
			return toModes(rows), err
		},
		func(ctx context.Context, tx pgx.Tx) error {
			return s.store.ReplaceModes(ctx, tx, org, scope, scopeID, userID, sources.Filter(), entries)
		})
	if err != nil {
		return nil, fmt.Errorf("storing modes: %w", err)
	}
	return modes, nil
}

// modesChange records a replacement of a scope's overrides as the
// overrides of the sources whose overrides it changed (one added, removed
// or set to another mode), before and after, with those sources as the
// entry's: a token whose sources claim allows them lists the entry, and
// it shows nothing of another source. A replacement that changed nothing
// records the overrides of the sources its keys named (the same before
// and after), or, naming none, {} and {} as an entry of the organization.
func modesChange(keys []string) func(c *audit.Change, before, after policy.Modes) {
	return func(c *audit.Change, before, after policy.Modes) {
		var changed []string
		for key, mode := range before {
			if m, ok := after[key]; !ok || m != mode {
				changed = append(changed, modeSource(key))
			}
		}
		for key := range after {
			if _, ok := before[key]; !ok {
				changed = append(changed, modeSource(key))
			}
		}
		if len(changed) == 0 {
			for _, key := range keys {
				changed = append(changed, modeSource(key))
			}
		}
		slices.Sort(changed)
		c.Sources = slices.Compact(changed)
		c.Before, c.After = modesOf(before, c.Sources), modesOf(after, c.Sources)
	}
}

// modeSource is the source of an override's key ("<source>:<action>").
func modeSource(key string) string {
	return key[:max(strings.LastIndex(key, ":"), 0)]
}

// modesOf returns the overrides of modes whose source is one of sources.
func modesOf(modes policy.Modes, sources []string) policy.Modes {
	out := policy.Modes{}
	for key, mode := range modes {
		if slices.Contains(sources, modeSource(key)) {
			out[key] = mode
		}
	}
	return out
}

func modeScope(org, automationID string) (string, string) {
	if automationID != "" {
		return "automation", automationID
	}
	return "org", org
}
