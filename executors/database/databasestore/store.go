// Package databasestore stores the databases organizations register: the
// one package of the database kind that runs SQL. Each method reads or
// writes through a fixed pool: the API's methods through the tenant pool,
// whose queries see only the caller's organization (row-level security),
// and Lookup, for the workers, through the privileged pool.
package databasestore

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxd/outboxd/executors/database"
	"github.com/outboxd/outboxd/internal/domain/credential/credentialstore"
	"github.com/outboxd/outboxd/internal/domain/orgsource"
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
	tenant  *pgxpool.Pool
	owner   *pgxpool.Pool
	secrets orgsource.Secrets
	queries *dbsqlc.Queries
}

// New returns a Store on the API's tenant pool and the workers' owner
// pool, sealing URLs in creds.
func New(tenant, owner *pgxpool.Pool, creds *credentialstore.Store) *Store {
	return &Store{tenant: tenant, owner: owner, secrets: orgsource.Secrets{Store: creds}, queries: dbsqlc.New()}
}

// List returns org's databases by name (tenant pool).
func (s *Store) List(ctx context.Context, org string) ([]Row, error) {
	return s.queries.DatabaseList(ctx, s.tenant, org)
}

// Get returns one database of org, and false when there is none (tenant
// pool).
func (s *Store) Get(ctx context.Context, org string, id uuid.UUID) (Row, bool, error) {
	return found(s.queries.DatabaseGet(ctx, s.tenant, dbsqlc.DatabaseGetParams{ID: id, OrganizationID: org}))
}

// Lookup is Get for the workers, for any organization (owner pool).
func (s *Store) Lookup(ctx context.Context, org string, id uuid.UUID) (Row, bool, error) {
	return found(s.queries.DatabaseGet(ctx, s.owner, dbsqlc.DatabaseGetParams{ID: id, OrganizationID: org}))
}

func found(row Row, err error) (Row, bool, error) {
	if errors.Is(err, pgx.ErrNoRows) {
		return row, false, nil
	}
	return row, err == nil, err
}

// Create inserts a database of org and seals its URL in the same
// transaction (tenant pool).
func (s *Store) Create(ctx context.Context, org, by string, f *Fields, url string) (Row, error) {
	return dbutil.WithTxV(ctx, s.tenant, func(ctx context.Context, tx pgx.Tx) (Row, error) {
		row, err := s.queries.DatabaseInsert(ctx, tx, dbsqlc.DatabaseInsertParams{
			OrganizationID: org, Name: f.Name, Host: f.Host, Database: f.Database,
			StatementTimeoutMs: f.StatementTimeoutMs, MaxRows: f.MaxRows, CreatedBy: by,
		})
		if err != nil {
			return row, err
		}
		return row, s.secrets.Seal(ctx, tx, org, database.SourceID(row.ID), url, by)
	})
}

// Update locks a database of org, has change compute its new fields and,
// when not empty, a new URL, and writes both in one transaction (tenant
// pool). notFound is the error when org has no such database.
func (s *Store) Update(ctx context.Context, org, by string, id uuid.UUID, notFound error,
	change func(cur *Row) (f *Fields, url string, err error)) (Row, error) {
	return dbutil.WithTxV(ctx, s.tenant, func(ctx context.Context, tx pgx.Tx) (Row, error) {
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
		if url != "" {
			if err := s.secrets.Seal(ctx, tx, org, database.SourceID(id), url, by); err != nil {
				return cur, err
			}
		}
		return s.queries.DatabaseUpdate(ctx, tx, dbsqlc.DatabaseUpdateParams{
			ID: id, OrganizationID: org, Name: f.Name, Host: f.Host, Database: f.Database,
			StatementTimeoutMs: f.StatementTimeoutMs, MaxRows: f.MaxRows,
		})
	})
}

// Delete deletes a database of org and its URL (tenant pool).
func (s *Store) Delete(ctx context.Context, org string, id uuid.UUID, notFound error) error {
	return s.secrets.Delete(ctx, s.tenant, org, database.SourceID(id), notFound, func(ctx context.Context, tx pgx.Tx) (int64, error) {
		return s.queries.DatabaseDelete(ctx, tx, dbsqlc.DatabaseDeleteParams{ID: id, OrganizationID: org})
	})
}
