// Package settingsstore stores an organization's settings: its action
// modes, quiet hours and do-not-contact patterns. It is the one package of
// the settings that runs SQL; every method reads or writes through the
// API's tenant pool, whose queries see only the caller's organization
// (row-level security).
package settingsstore

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxd/outboxd/internal/platform/dbsqlc"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/policy"
)

// Store reads and replaces settings.
type Store struct {
	pool    *pgxpool.Pool
	queries *dbsqlc.Queries
}

// New returns a Store on the API's tenant pool.
func New(pool *pgxpool.Pool) *Store {
	return &Store{pool: pool, queries: dbsqlc.New()}
}

// Mode is one stored action mode.
type Mode struct {
	SourceID, ActionID string
	Mode               policy.Mode
}

// Locked runs fn in a transaction that holds the lock of one of org's
// settings (setting names it, such as "action_modes:org:acme") until it
// ends, so that replacements of that setting, and the reads they compare
// with, take turns.
func (s *Store) Locked(ctx context.Context, org, setting string, fn func(ctx context.Context, tx pgx.Tx) error) error {
	return dbutil.WithTx(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) error {
		if err := s.queries.SettingsLock(ctx, tx, "outboxd.settings:"+org+":"+setting); err != nil {
			return err
		}
		return fn(ctx, tx)
	})
}

// Modes returns the modes of one scope ("org" or "automation") of org.
func (s *Store) Modes(ctx context.Context, org, scope, scopeID string) ([]Mode, error) {
	return s.ModesIn(ctx, s.pool, org, scope, scopeID)
}

// ModesIn is Modes on db (a transaction of Locked).
func (s *Store) ModesIn(ctx context.Context, db dbutil.DB, org, scope, scopeID string) ([]Mode, error) {
	rows, err := s.queries.ModeList(ctx, db, dbsqlc.ModeListParams{OrganizationID: org, Scope: scope, ScopeID: scopeID})
	if err != nil {
		return nil, err
	}
	out := make([]Mode, len(rows))
	for i, r := range rows {
		out[i] = Mode{SourceID: r.SourceID, ActionID: r.ActionID, Mode: policy.Mode(r.Mode)}
	}
	return out, nil
}

// ReplaceModes replaces the modes of one scope of org in tx: with sources
// (a token's sources claim as a filter; nil: any source), only the modes
// of those sources are deleted, and the others kept.
func (s *Store) ReplaceModes(ctx context.Context, tx pgx.Tx, org, scope, scopeID, by string, sources []string, modes []Mode) error {
	err := s.queries.ModeDeleteScope(ctx, tx, dbsqlc.ModeDeleteScopeParams{OrganizationID: org, Scope: scope, ScopeID: scopeID, Sources: sources})
	if err != nil {
		return err
	}
	for _, m := range modes {
		err := s.queries.ModeUpsert(ctx, tx, dbsqlc.ModeUpsertParams{
			OrganizationID: org, Scope: scope, ScopeID: scopeID, SourceID: m.SourceID, ActionID: m.ActionID, Mode: string(m.Mode), UpdatedBy: by,
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// QuietWindow is one stored quiet window; minutes count from midnight.
type QuietWindow struct {
	Bucket, TimeZone       string
	StartMinute, EndMinute int
}

// QuietHours returns org's quiet windows.
func (s *Store) QuietHours(ctx context.Context, org string) ([]QuietWindow, error) {
	return s.QuietHoursIn(ctx, s.pool, org)
}

// QuietHoursIn is QuietHours on db (a transaction of Locked).
func (s *Store) QuietHoursIn(ctx context.Context, db dbutil.DB, org string) ([]QuietWindow, error) {
	rows, err := s.queries.QuietHoursList(ctx, db, org)
	if err != nil {
		return nil, err
	}
	out := make([]QuietWindow, len(rows))
	for i, r := range rows {
		out[i] = QuietWindow{Bucket: r.Bucket, TimeZone: r.TimeZone, StartMinute: int(r.StartMinute), EndMinute: int(r.EndMinute)}
	}
	return out, nil
}

// ReplaceQuietHours replaces org's quiet windows in tx.
func (s *Store) ReplaceQuietHours(ctx context.Context, tx pgx.Tx, org, by string, windows []QuietWindow) error {
	if err := s.queries.QuietHoursDeleteAll(ctx, tx, org); err != nil {
		return err
	}
	for _, w := range windows {
		err := s.queries.QuietHoursInsert(ctx, tx, dbsqlc.QuietHoursInsertParams{
			OrganizationID: org, Bucket: w.Bucket, TimeZone: w.TimeZone,
			StartMinute: int32(w.StartMinute), EndMinute: int32(w.EndMinute), UpdatedBy: by,
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// DoNotContact returns org's do-not-contact patterns (nil when none).
func (s *Store) DoNotContact(ctx context.Context, org string) ([]string, error) {
	return s.DoNotContactIn(ctx, s.pool, org)
}

// DoNotContactIn is DoNotContact on db (a transaction of Locked).
func (s *Store) DoNotContactIn(ctx context.Context, db dbutil.DB, org string) ([]string, error) {
	return s.queries.DoNotContactList(ctx, db, org)
}

// ReplaceDoNotContact replaces org's do-not-contact patterns in tx.
func (s *Store) ReplaceDoNotContact(ctx context.Context, tx pgx.Tx, org, by string, patterns []string) error {
	if err := s.queries.DoNotContactDeleteAll(ctx, tx, org); err != nil {
		return err
	}
	for _, p := range patterns {
		if err := s.queries.DoNotContactInsert(ctx, tx, dbsqlc.DoNotContactInsertParams{OrganizationID: org, Pattern: p, CreatedBy: by}); err != nil {
			return err
		}
	}
	return nil
}
