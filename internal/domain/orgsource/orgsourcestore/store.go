// Package orgsourcestore is what the stores of the kinds of source an
// organization registers itself (executors/mcp/mcpstore,
// executors/database/databasestore) share: their two pools, the reading of
// one source's row through either, and the sealing of a source's secret in
// the credential store inside the transaction that writes its row.
package orgsourcestore

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxd/outboxd/internal/domain/credential"
	"github.com/outboxd/outboxd/internal/domain/credential/credentialstore"
	"github.com/outboxd/outboxd/internal/platform/dbsqlc"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
)

// Store is the shared part of a kind's store of rows R. The API's methods
// work through Tenant, whose queries see only the caller's organization
// (row-level security); Lookup, for the workers, through Owner, the
// privileged pool.
type Store[R any] struct {
	Tenant, Owner *pgxpool.Pool
	creds         *credentialstore.Store
	get           func(ctx context.Context, db dbsqlc.DBTX, org string, id uuid.UUID) (R, error)
}

// New returns a Store that seals secrets in creds and reads one row of org
// with get.
func New[R any](tenant, owner *pgxpool.Pool, creds *credentialstore.Store,
	get func(ctx context.Context, db dbsqlc.DBTX, org string, id uuid.UUID) (R, error)) *Store[R] {
	return &Store[R]{Tenant: tenant, Owner: owner, creds: creds, get: get}
}

// Get returns one source of org, enabled or not, and false when there is
// none (tenant pool).
func (s *Store[R]) Get(ctx context.Context, org string, id uuid.UUID) (R, bool, error) {
	return found(s.get(ctx, s.Tenant, org, id))
}

// Lookup is Get for the workers, for any organization (owner pool).
func (s *Store[R]) Lookup(ctx context.Context, org string, id uuid.UUID) (R, bool, error) {
	return found(s.get(ctx, s.Owner, org, id))
}

func found[R any](row R, err error) (R, bool, error) {
	if errors.Is(err, pgx.ErrNoRows) {
		return row, false, nil
	}
	return row, err == nil, err
}

// Secret says what a write does with a source's sealed secret: the zero
// value keeps it.
type Secret struct {
	// Drop deletes it.
	Drop bool
	// Value, when not empty, replaces it.
	Value string
}

// Seal does what secret says with org's credential for sourceID, in tx.
func (s *Store[R]) Seal(ctx context.Context, tx pgx.Tx, org, sourceID, by string, secret Secret) error {
	req := credential.Request{Org: org, Integration: sourceID}
	switch {
	case secret.Drop:
		return s.creds.DeleteTx(ctx, tx, req)
	case secret.Value != "":
		_, err := s.creds.PutTx(ctx, tx, req, credential.Token{Value: secret.Value}, by)
		return err
	}
	return nil
}

// DeleteSource deletes a source's row of org (del answers how many rows it
// deleted) and its secret in one transaction of the tenant pool; notFound
// when there was no row.
func (s *Store[R]) DeleteSource(ctx context.Context, org, sourceID string, notFound error,
	del func(ctx context.Context, tx pgx.Tx) (int64, error)) error {
	return dbutil.WithTx(ctx, s.Tenant, func(ctx context.Context, tx pgx.Tx) error {
		n, err := del(ctx, tx)
		if err != nil {
			return err
		}
		if n == 0 {
			return notFound
		}
		return s.Seal(ctx, tx, org, sourceID, "", Secret{Drop: true})
	})
}
