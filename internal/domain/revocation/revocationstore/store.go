// Package revocationstore stores revoked tokens (token_revocations,
// migration 030). The API writes and lists an organization's revocations
// through its tenant pool (the caller gives the organization as the
// database's too, dbutil.WithOrg); the processes load every
// organization's through the owner's pool, as does the operator's CLI.
package revocationstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxd/outboxd/internal/platform/dbsqlc"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
)

// Revocation is one revocation: an organization's tokens issued before
// IssuedBefore that carry its JTI, SessionID, AutomationID or Subject, or
// with none of these all of the organization's tokens issued before
// IssuedBefore.
type Revocation struct {
	ID           int64
	Org          string
	JTI          string
	SessionID    string
	AutomationID string
	Subject      string
	IssuedBefore time.Time
	RevokedBy    string
	RevokedAt    time.Time
	// ExpiresAt is when the revocation is dropped; nil: it is kept.
	ExpiresAt *time.Time
}

// Store reads and writes revocations.
type Store struct {
	pool    *pgxpool.Pool
	queries *dbsqlc.Queries
}

// New returns a Store on pool.
func New(pool *pgxpool.Pool) *Store {
	return &Store{pool: pool, queries: dbsqlc.New()}
}

// Insert stores r (its ID and RevokedAt are set by the database) and, in
// the same transaction, drops the revocations that have expired.
func (s *Store) Insert(ctx context.Context, r *Revocation) (Revocation, error) {
	return dbutil.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Revocation, error) {
		if _, err := s.queries.RevocationDeleteExpired(ctx, tx); err != nil {
			return Revocation{}, err
		}
		row, err := s.queries.RevocationInsert(ctx, tx, dbsqlc.RevocationInsertParams{
			OrganizationID: r.Org, Jti: nilIfEmpty(r.JTI), SessionID: nilIfEmpty(r.SessionID),
			AutomationID: nilIfEmpty(r.AutomationID), Subject: nilIfEmpty(r.Subject), IssuedBefore: r.IssuedBefore, RevokedBy: r.RevokedBy, ExpiresAt: r.ExpiresAt,
		})
		return fromRow(&row), err
	})
}

// List returns org's revocations in effect, newest first, at most limit.
func (s *Store) List(ctx context.Context, org string, limit int) ([]Revocation, error) {
	rows, err := s.queries.RevocationList(ctx, s.pool, dbsqlc.RevocationListParams{OrganizationID: org, MaxRows: int32(limit)})
	if err != nil {
		return nil, err
	}
	return fromRows(rows), nil
}

// Version is the revocations' version, which every change to them bumps.
func (s *Store) Version(ctx context.Context) (int64, error) {
	return s.queries.RevocationVersion(ctx, s.pool)
}

// Load returns every organization's revocations in effect with the
// version they are at, read in one snapshot.
func (s *Store) Load(ctx context.Context) (version int64, all []Revocation, err error) {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return 0, nil, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if version, err = s.queries.RevocationVersion(ctx, tx); err != nil {
		return 0, nil, err
	}
	rows, err := s.queries.RevocationAll(ctx, tx)
	if err != nil {
		return 0, nil, err
	}
	return version, fromRows(rows), tx.Commit(ctx)
}

// DeleteExpired drops the revocations that have expired.
func (s *Store) DeleteExpired(ctx context.Context) (int64, error) {
	return s.queries.RevocationDeleteExpired(ctx, s.pool)
}

func fromRows(rows []dbsqlc.TokenRevocation) []Revocation {
	out := make([]Revocation, len(rows))
	for i := range rows {
		out[i] = fromRow(&rows[i])
	}
	return out
}

func fromRow(r *dbsqlc.TokenRevocation) Revocation {
	return Revocation{
		ID: r.ID, Org: r.OrganizationID, JTI: deref(r.Jti), SessionID: deref(r.SessionID), AutomationID: deref(r.AutomationID),
		Subject: deref(r.Subject), IssuedBefore: r.IssuedBefore, RevokedBy: r.RevokedBy, RevokedAt: r.RevokedAt, ExpiresAt: r.ExpiresAt,
	}
}

func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
