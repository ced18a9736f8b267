// Package databasestore stores the databases organizations register: the
// one package of the database kind that runs SQL. Each method reads or
// writes through a fixed pool: the API's methods through the tenant pool,
// whose queries see only the caller's organization (row-level security),
// and Lookup, for the workers, through the privileged pool. What it shares
// with the other kinds' stores (Get, Lookup, the sealing of the URL) is
// orgsourcestore's.
package databasestore

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxd/outboxd/executors/database"
	"github.com/outboxd/outboxd/internal/domain/credential/credentialstore"
	"github.com/outboxd/outboxd/internal/domain/orgsource/orgsourcestore"
	"github.com/outboxd/outboxd/internal/platform/dbsqlc"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
)

// Row is a stored database.
type Row = dbsqlc.OrgDatabase

// Fields are a database's writable fields, checked.
type Fields struct {
	Name, Host, Database string
	StatementTimeoutMs   int32
	MaxRows              int32
}

// Store reads and writes registered databases.
type Store struct {
	*orgsourcestore.Store[Row]
	queries *dbsqlc.Queries
}

// New returns a Store on the API's tenant pool and the workers' owner
// pool, sealing URLs in creds.
func New(tenant, owner *pgxpool.Pool, creds *credentialstore.Store) *Store {
	q := dbsqlc.New()
	return &Store{queries: q, Store: orgsourcestore.New(tenant, owner, creds,
		func(ctx context.Context, db dbsqlc.DBTX, org string, id uuid.UUID) (Row, error) {
			return q.DatabaseGet(ctx, db, dbsqlc.DatabaseGetParams{ID: id, OrganizationID: org})
		})}
}

// List returns org's databases by name (tenant pool).
func (s *Store) List(ctx context.Context, org string) ([]Row, error) {
	return s.queries.DatabaseList(ctx, s.Tenant, org)
}

// Create inserts a database of org and seals its URL in the same
// transaction (tenant pool).
func (s *Store) Create(ctx context.Context, org, by string, f *Fields, url string) (Row, error) {
	return dbutil.WithTxV(ctx, s.Tenant, func(ctx context.Context, tx pgx.Tx) (Row, error) {
		row, err := s.queries.DatabaseInsert(ctx, tx, dbsqlc.DatabaseInsertParams{
			OrganizationID: org, Name: f.Name, Host: f.Host, Database: f.Database,
			StatementTimeoutMs: f.StatementTimeoutMs, MaxRows: f.MaxRows, CreatedBy: by,
		})
		if err != nil {
			return row, err
		}
		return row, s.Seal(ctx, tx, org, database.SourceID(row.ID), by, orgsourcestore.Secret{Value: url})
	})
}

// Update locks a database of org, has change compute its new fields and,
// when not empty, a new URL, and writes both in one transaction (tenant
// pool), then runs then (when not nil) in it. notFound is the error when
// org has no such database.
func (s *Store) Update(ctx context.Context, org, by string, id uuid.UUID, notFound error,
	change func(cur *Row) (f *Fields, url string, err error), then func(ctx context.Context, tx pgx.Tx) error) (Row, error) {
	return dbutil.WithTxV(ctx, s.Tenant, func(ctx context.Context, tx pgx.Tx) (Row, error) {
		cur, err := s.queries.DatabaseGetForUpdate(ctx, tx, dbsqlc.DatabaseGetForUpdateParams{ID: id, OrganizationID: org})
		if errors.Is(err, pgx.ErrNoRows) {
			return cur, notFound
		}
		if err != nil {
			return cur, err
		}
		f, url, err := change(&cur)
		if err != nil {
			return cur, err
		}
		if err := s.Seal(ctx, tx, org, database.SourceID(id), by, orgsourcestore.Secret{Value: url}); err != nil {
			return cur, err
		}
		row, err := s.queries.DatabaseUpdate(ctx, tx, dbsqlc.DatabaseUpdateParams{
			ID: id, OrganizationID: org, Name: f.Name, Host: f.Host, Database: f.Database,
			StatementTimeoutMs: f.StatementTimeoutMs, MaxRows: f.MaxRows,
		})
		if err == nil && then != nil {
			err = then(ctx, tx)
		}
		return row, err
	})
}

// Delete deletes a database of org and its URL (tenant pool).
func (s *Store) Delete(ctx context.Context, org string, id uuid.UUID, notFound error) error {
	return s.DeleteSource(ctx, org, database.SourceID(id), notFound, func(ctx context.Context, tx pgx.Tx) (int64, error) {
		return s.queries.DatabaseDelete(ctx, tx, dbsqlc.DatabaseDeleteParams{ID: id, OrganizationID: org})
	})
}
