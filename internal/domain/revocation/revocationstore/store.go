// Package revocationstore stores revoked tokens (token_revocations,
// migration 030). The API writes and lists an organization's revocations
// through its tenant pool (the caller gives the organization as the
// database's too, dbutil.WithOrg); the processes load every
// organization's through the owner's pool, as does the operator's CLI.
package revocationstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxd/outboxd/internal/domain/invocation"
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
//
// The transaction first takes r's organization's revocation lock, which
// the transactions recording its invocations take shared (Refusing): it
// waits for those under way to commit, so that what then looks for
// (Requested) includes their invocations, and those that begin wait for
// it to commit, and then see r.
func (s *Store) Insert(ctx context.Context, r *Revocation, then func(ctx context.Context, tx pgx.Tx, stored *Revocation) error) (Revocation, error) {
	return dbutil.WithTxV(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) (Revocation, error) {
		if err := s.queries.RevocationLock(ctx, tx, r.Org); err != nil {
			return Revocation{}, err
		}
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
// (requested_by), jti and iat: those of r's selector whose token was
// issued before r's cut-off are matched (a revocation by jti: its token's).
// One whose token had no iat, or recorded before invocations kept their
// token's (migration 048), is matched by its creation time: created
// before the cut-off.
func (s *Store) Requested(ctx context.Context, tx pgx.Tx, r *Revocation) ([]uuid.UUID, error) {
	return s.queries.RevocationRequested(ctx, tx, dbsqlc.RevocationRequestedParams{
		OrganizationID: r.Org, IssuedBefore: r.IssuedBefore, Jti: nilIfEmpty(r.JTI),
		SessionID: nilIfEmpty(r.SessionID), AutomationID: nilIfEmpty(r.AutomationID), Subject: nilIfEmpty(r.Subject),
	})
}

// Refusing returns, for each of tokens, the revocation of org in effect
// that refuses it (the oldest), nil where none does: looked for in tx, a
// transaction recording invocations of org that these tokens asked for,
// which the caller withdraws (package revocation's Refusals) before tx
// commits.
//
// The API processes refuse a revoked token from memory, which another
// process's revocation reaches up to auth.revocation_refresh later, and a
// request past its check goes on anyway; a revocation withdraws, in its
// own transaction, the invocations committed before it looks (Requested).
// An invocation committed after that, by a token revoked before it
// committed, is what this catches, with no gap between the two: tx takes
// its organization's revocation lock shared, in a statement of its own,
// then looks, and a revocation's transaction takes the lock exclusive
// before anything (Insert). Either the revocation holds it first, and tx
// waits until it committed and then sees it (the look's snapshot, taken
// after the lock, in read committed), or tx does, and the revocation
// waits for tx to commit and then finds its invocations. Shared holders do
// not wait for each other: the cost on the hot path is two statements in
// each transaction recording invocations (a group commit's, for all of
// them), the look an index lookup per token (migration 048), and a
// revocation waits for the organization's recording transactions under
// way.
func Refusing(ctx context.Context, tx pgx.Tx, org string, tokens []*invocation.Token) ([]*Revocation, error) {
	type look struct {
		Token        int        `json:"token"`
		JTI          *string    `json:"jti"`
		IssuedAt     *time.Time `json:"issued_at"`
		SessionID    *string    `json:"session_id"`
		AutomationID *string    `json:"automation_id"`
		Subject      *string    `json:"subject"`
		UserID       *string    `json:"user_id"`
	}
	looks := make([]look, len(tokens))
	for i, t := range tokens {
		looks[i] = look{Token: i, JTI: nilIfEmpty(t.JTI), IssuedAt: t.IssuedAt, SessionID: nilIfEmpty(t.SessionID),
			AutomationID: nilIfEmpty(t.AutomationID), Subject: nilIfEmpty(t.Subject), UserID: nilIfEmpty(t.UserID)}
	}
	encoded, err := json.Marshal(looks)
	if err != nil {
		return nil, err
	}
	// Both statements go in one round trip: the server runs the look once
	// the lock is taken, with a snapshot of its own.
	q, p := dbsqlc.New(), &pipeline{tx: tx}
	_ = q.RevocationLockShared(ctx, p, org) // queued: its error comes with the look's
	rows, err := q.RevocationRefusing(ctx, p, dbsqlc.RevocationRefusingParams{Tokens: encoded, OrganizationID: org})
	if err != nil {
		return nil, fmt.Errorf("looking for the tokens' revocations: %w", err)
	}
	out := make([]*Revocation, len(tokens))
	for _, r := range rows {
		out[r.Token] = &Revocation{
			ID: r.ID, Org: org, JTI: deref(r.Jti), SessionID: deref(r.SessionID), AutomationID: deref(r.AutomationID),
			Subject: deref(r.Subject), IssuedBefore: r.IssuedBefore, RevokedBy: r.RevokedBy,
		}
	}
	return out, nil
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
