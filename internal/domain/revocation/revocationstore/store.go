// Package revocationstore stores revoked tokens (token_revocations,
// migration 030). The API writes and lists an organization's revocations
// through its tenant pool (the caller gives the organization as the
// database's too, dbutil.WithOrg); the processes load every
// organization's through the owner's pool, as does the operator's CLI.
package revocationstore

import (
	"context"
	"time"

	"github.com/google/uuid"
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
	// Withdrawn is how many invocations the revocation withdrew when it
	// was stored (Insert's then counts them); 0 when read back.
	Withdrawn int
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
// the same transaction, drops the revocations that have expired and then
// runs then (nil: nothing) with the stored revocation: the revocation is
// committed with what then does, or not at all.
func (s *Store) Insert(ctx context.Context, r *Revocation, then func(ctx context.Context, tx pgx.Tx, stored *Revocation) error) (Revocation, error) {
	return dbutil.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Revocation, error) {
		if _, err := s.queries.RevocationDeleteExpired(ctx, tx); err != nil {
			return Revocation{}, err
		}
		row, err := s.queries.RevocationInsert(ctx, tx, dbsqlc.RevocationInsertParams{
			OrganizationID: r.Org, Jti: nilIfEmpty(r.JTI), SessionID: nilIfEmpty(r.SessionID),
			AutomationID: nilIfEmpty(r.AutomationID), Subject: nilIfEmpty(r.Subject), IssuedBefore: r.IssuedBefore, RevokedBy: r.RevokedBy, ExpiresAt: r.ExpiresAt,
		})
		stored := fromRow(&row)
		if err != nil || then == nil {
			return stored, err
		}
		return stored, then(ctx, tx, &stored)
	})
}

// Requested returns, locked in id order until tx ends, the invocations of
// r's organization that tokens r refuses asked for and that have not
// started: pending, or approved and never started. An invocation records
// its token's session_id, automation_id, user_id and subject
// (requested_by), not its iat or jti, so only those created before r's
// cut-off are matched (their token was issued before it), and a
// revocation by jti matches none.
func (s *Store) Requested(ctx context.Context, tx pgx.Tx, r *Revocation) ([]uuid.UUID, error) {
	if r.JTI != "" {
		return nil, nil
	}
	return s.queries.RevocationRequested(ctx, tx, dbsqlc.RevocationRequestedParams{
		OrganizationID: r.Org, IssuedBefore: r.IssuedBefore,
		SessionID: nilIfEmpty(r.SessionID), AutomationID: nilIfEmpty(r.AutomationID), Subject: nilIfEmpty(r.Subject),
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
