// Package grantstore stores grants (migration 034). Every statement runs
// on the connection it is given: the outbox's submission and approval
// transactions, or the API's tenant pool (the caller gives the
// organization as the database's too, dbutil.WithOrg).
package grantstore

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outboxd/outboxd/internal/platform/dbsqlc"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
)

// Grant is one stored grant.
type Grant struct {
	ID             uuid.UUID
	Org            string
	Scope          string // "session" or "automation"
	ScopeID        string
	SourceID       string
	ActionID       string
	Fixed          map[string]json.RawMessage
	Granted        int
	Remaining      int
	ExpiresAt      time.Time
	DefinitionHash string
	CreatedBy      string
	CreatedFrom    uuid.UUID
	// UserID is the user the approved invocation was made for ("" for
	// none): the grant lets through only invocations made for the same.
	UserID       string
	CreatedAt    time.Time
	RevokedAt    *time.Time
	RevokedBy    string
	RevokeReason string
}

// Candidate is a live grant that matches a request.
type Candidate struct {
	ID             uuid.UUID
	DefinitionHash string
}

// Store runs the grants' statements.
type Store struct {
	q *dbsqlc.Queries
}

// New returns a Store.
func New() *Store {
	return &Store{q: dbsqlc.New()}
}

// Insert stores g (Remaining starts at Granted; CreatedAt is the
// database's).
func (s *Store) Insert(ctx context.Context, db dbutil.DB, g *Grant) (Grant, error) {
	fixed, err := json.Marshal(fixedOrEmpty(g.Fixed))
	if err != nil {
		return Grant{}, err
	}
	row, err := s.q.GrantInsert(ctx, db, dbsqlc.GrantInsertParams{
		ID: g.ID, OrganizationID: g.Org, Scope: g.Scope, ScopeID: g.ScopeID, SourceID: g.SourceID, ActionID: g.ActionID,
		Fixed: fixed, Granted: int32(g.Granted), ExpiresAt: g.ExpiresAt, DefinitionHash: g.DefinitionHash,
		CreatedBy: g.CreatedBy, CreatedFrom: g.CreatedFrom, UserID: g.UserID,
	})
	if err != nil {
		return Grant{}, err
	}
	return fromRow(&row), nil
}

// Candidates returns the live grants of org that match a request of
// source's action in sessionID or automationID, made for userID ("" for
// none), whose stored params are params, soonest to expire first.
func (s *Store) Candidates(ctx context.Context, db dbutil.DB, org, source, action, sessionID, automationID, userID string, params []byte) ([]Candidate, error) {
	rows, err := s.q.GrantCandidates(ctx, db, dbsqlc.GrantCandidatesParams{
		OrganizationID: org, SourceID: source, ActionID: action, SessionID: sessionID, AutomationID: automationID, UserID: userID, Params: params,
	})
	if err != nil {
		return nil, err
	}
	out := make([]Candidate, len(rows))
	for i, r := range rows {
		out[i] = Candidate{ID: r.ID, DefinitionHash: r.DefinitionHash}
	}
	return out, nil
}

// Use takes one use of grant id; ok is false when it has none left, has
// expired or is revoked.
func (s *Store) Use(ctx context.Context, db dbutil.DB, org string, id uuid.UUID) (remaining int, ok bool, err error) {
	row, err := s.q.GrantUse(ctx, db, dbsqlc.GrantUseParams{ID: id, OrganizationID: org})
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	return int(row.Remaining), true, nil
}

// GiveBack returns a use of grant id taken for an invocation that was not
// recorded.
func (s *Store) GiveBack(ctx context.Context, db dbutil.DB, org string, id uuid.UUID) error {
	return s.q.GrantGiveBack(ctx, db, dbsqlc.GrantGiveBackParams{ID: id, OrganizationID: org})
}

// RevokeAction revokes the unrevoked grants of an action whose definition
// hash is not keepHash (all of them when keepHash is "").
func (s *Store) RevokeAction(ctx context.Context, db dbutil.DB, org, source, action, keepHash, by, reason string) ([]uuid.UUID, error) {
	return s.q.GrantRevokeAction(ctx, db, dbsqlc.GrantRevokeActionParams{
		OrganizationID: org, SourceID: source, ActionID: action, KeepHash: keepHash, RevokedBy: &by, Reason: &reason,
	})
}

// RevokeSource revokes the unrevoked grants of every action of a source.
func (s *Store) RevokeSource(ctx context.Context, db dbutil.DB, org, source, by, reason string) ([]uuid.UUID, error) {
	return s.q.GrantRevokeSource(ctx, db, dbsqlc.GrantRevokeSourceParams{
		OrganizationID: org, SourceID: source, RevokedBy: &by, Reason: &reason,
	})
}

// Revoked is a grant revoked with others, and its source.
type Revoked struct {
	ID     uuid.UUID
	Source string
}

// RevokeCreatedBy revokes the live grants of org that createdBy created.
func (s *Store) RevokeCreatedBy(ctx context.Context, db dbutil.DB, org, createdBy, by, reason string) ([]Revoked, error) {
	rows, err := s.q.GrantRevokeCreatedBy(ctx, db, dbsqlc.GrantRevokeCreatedByParams{
		OrganizationID: org, CreatedBy: createdBy, RevokedBy: &by, Reason: &reason,
	})
	out := make([]Revoked, len(rows))
	for i, r := range rows {
		out[i] = Revoked{ID: r.ID, Source: r.SourceID}
	}
	return out, err
}

// Revoke revokes one grant; ok is false when it is unknown or already
// revoked.
func (s *Store) Revoke(ctx context.Context, db dbutil.DB, org string, id uuid.UUID, by, reason string) (g Grant, ok bool, err error) {
	row, err := s.q.GrantRevoke(ctx, db, dbsqlc.GrantRevokeParams{ID: id, OrganizationID: org, RevokedBy: &by, Reason: &reason})
	return one(row, err)
}

// Get returns one grant; ok is false when org has none with id.
func (s *Store) Get(ctx context.Context, db dbutil.DB, org string, id uuid.UUID) (g Grant, ok bool, err error) {
	row, err := s.q.GrantGet(ctx, db, dbsqlc.GrantGetParams{ID: id, OrganizationID: org})
	return one(row, err)
}

// ByInvocation returns the grant created with the approval of invocation
// id; ok is false when there is none.
func (s *Store) ByInvocation(ctx context.Context, db dbutil.DB, org string, id uuid.UUID) (g Grant, ok bool, err error) {
	row, err := s.q.GrantByInvocation(ctx, db, dbsqlc.GrantByInvocationParams{OrganizationID: org, CreatedFrom: id})
	return one(row, err)
}

// List returns org's grants, newest first, at most limit; only the live
// ones with active; with sources not nil, only those of the source ids it
// holds (none when empty).
func (s *Store) List(ctx context.Context, db dbutil.DB, org string, sources []string, active bool, limit int) ([]Grant, error) {
	rows, err := s.q.GrantList(ctx, db, dbsqlc.GrantListParams{OrganizationID: org, Active: active, Sources: sources, MaxRows: int32(limit)})
	if err != nil {
		return nil, err
	}
	out := make([]Grant, len(rows))
	for i := range rows {
		out[i] = fromRow(&rows[i])
	}
	return out, nil
}

func one(row dbsqlc.Grant, err error) (Grant, bool, error) {
	if errors.Is(err, pgx.ErrNoRows) {
		return Grant{}, false, nil
	}
	if err != nil {
		return Grant{}, false, err
	}
	return fromRow(&row), true, nil
}

func fromRow(r *dbsqlc.Grant) Grant {
	g := Grant{
		ID: r.ID, Org: r.OrganizationID, Scope: r.Scope, ScopeID: r.ScopeID, SourceID: r.SourceID, ActionID: r.ActionID,
		Granted: int(r.Granted), Remaining: int(r.Remaining), ExpiresAt: r.ExpiresAt, DefinitionHash: r.DefinitionHash,
		CreatedBy: r.CreatedBy, CreatedFrom: r.CreatedFrom, CreatedAt: r.CreatedAt, RevokedAt: r.RevokedAt,
		RevokedBy: deref(r.RevokedBy), RevokeReason: deref(r.RevokeReason), UserID: deref(r.UserID),
	}
	_ = json.Unmarshal(r.Fixed, &g.Fixed)
	g.Fixed = fixedOrEmpty(g.Fixed)
	return g
}

func fixedOrEmpty(m map[string]json.RawMessage) map[string]json.RawMessage {
	if m == nil {
		return map[string]json.RawMessage{}
	}
	return m
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
