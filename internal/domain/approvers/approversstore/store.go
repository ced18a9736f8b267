// Package approversstore stores the organizations' approval policies and
// each person's approval of a pending invocation. Its reads and writes run
// on the database handle they are given: the API's pool, the decision's
// transaction, or the workers' pool.
package approversstore

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxd/outboxd/internal/platform/dbsqlc"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
)

// Store reads and writes approval policies and approvals.
type Store struct {
	pool *pgxpool.Pool
	q    *dbsqlc.Queries
}

// New returns a Store whose Locked transactions run on pool.
func New(pool *pgxpool.Pool) *Store {
	return &Store{pool: pool, q: dbsqlc.New()}
}

// Policy is an organization's stored policy, as JSON.
type Policy struct {
	Required json.RawMessage
	Groups   json.RawMessage
}

// Policy returns org's policy on db, and false when it stored none.
func (s *Store) Policy(ctx context.Context, db dbutil.DB, org string) (Policy, bool, error) {
	r, err := s.q.ApprovalPolicyGet(ctx, db, org)
	if errors.Is(err, pgx.ErrNoRows) {
		return Policy{}, false, nil
	}
	return Policy{Required: r.Required, Groups: r.Groups}, err == nil, err
}

// PutPolicy replaces org's policy in tx.
func (s *Store) PutPolicy(ctx context.Context, tx pgx.Tx, org, by string, p Policy) error {
	return s.q.ApprovalPolicyPut(ctx, tx, dbsqlc.ApprovalPolicyPutParams{OrganizationID: org, Required: p.Required, Groups: p.Groups, UpdatedBy: by})
}

// Locked runs fn in a transaction that holds the lock of org's approval
// policy until it ends, so that its replacements take turns.
func (s *Store) Locked(ctx context.Context, org string, fn func(ctx context.Context, tx pgx.Tx) error) error {
	return dbutil.WithTx(ctx, s.pool, func(ctx context.Context, tx pgx.Tx) error {
		if err := s.q.SettingsLock(ctx, tx, "outboxd.settings:"+org+":approvers"); err != nil {
			return err
		}
		return fn(ctx, tx)
	})
}

// Approval is one person's approval of an invocation.
type Approval struct {
	InvocationID uuid.UUID
	Approver     string
	DecidedAt    time.Time
}

// Insert records approver's approval of invocation id's intent digest in
// tx; false when they had approved that intent already (nothing changed).
func (s *Store) Insert(ctx context.Context, tx pgx.Tx, org string, id uuid.UUID, approver, digest string) (bool, error) {
	n, err := s.q.InvocationApprovalInsert(ctx, tx, dbsqlc.InvocationApprovalInsertParams{OrganizationID: org, InvocationID: id, Approver: approver, IntentDigest: digest})
	return n == 1, err
}

// Approvals returns the approvals of the invocations ids on db, oldest
// first within each.
func (s *Store) Approvals(ctx context.Context, db dbutil.DB, ids []uuid.UUID) ([]Approval, error) {
	rows, err := s.q.InvocationApprovalsList(ctx, db, ids)
	if err != nil {
		return nil, err
	}
	out := make([]Approval, len(rows))
	for i, r := range rows {
		out[i] = Approval{InvocationID: r.InvocationID, Approver: r.Approver, DecidedAt: r.DecidedAt}
	}
	return out, nil
}

// ChannelOrganizations returns the organizations with an approver group
// that has a Slack channel, on db.
func (s *Store) ChannelOrganizations(ctx context.Context, db dbutil.DB) ([]string, error) {
	return s.q.ApprovalPolicyChannelOrganizations(ctx, db)
}
