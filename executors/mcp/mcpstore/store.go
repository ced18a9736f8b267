// Package mcpstore stores the organizations' MCP connectors: the one
// package of the connector kind that runs SQL. Each method reads or writes
// through a fixed pool: the API's methods through the tenant pool, whose
// queries see only the caller's organization (row-level security), and
// Lookup, for the workers, through the privileged pool. What it shares
// with the other kinds' stores (Get, Lookup, the sealing of the secret) is
// orgsourcestore's.
package mcpstore

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxd/outboxd/executors/mcp"
	"github.com/outboxd/outboxd/internal/domain/credential/credentialstore"
	"github.com/outboxd/outboxd/internal/domain/orgsource/orgsourcestore"
	"github.com/outboxd/outboxd/internal/platform/dbsqlc"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
)

// Row is a stored connector.
type Row = dbsqlc.OrgConnector

// Fields are a connector's writable fields, checked.
type Fields struct {
	Name, URL, AuthType, AuthHeader string
	// RiskPolicy is the JSON of the connector's mcp.RiskPolicy.
	RiskPolicy []byte
	Enabled    bool
}

// Secret says what an update does with the connector's sealed secret: the
// zero value keeps it; Drop deletes it (auth none).
type Secret = orgsourcestore.Secret

// Store reads and writes connectors.
type Store struct {
	*orgsourcestore.Store[Row]
	queries *dbsqlc.Queries
}

// New returns a Store on the API's tenant pool and the workers' owner
// pool, sealing secrets in creds.
func New(tenant, owner *pgxpool.Pool, creds *credentialstore.Store) *Store {
	q := dbsqlc.New()
	return &Store{queries: q, Store: orgsourcestore.New(tenant, owner, creds,
		func(ctx context.Context, db dbsqlc.DBTX, org string, id uuid.UUID) (Row, error) {
			return q.ConnectorGet(ctx, db, dbsqlc.ConnectorGetParams{ID: id, OrganizationID: org})
		})}
}

// List returns org's connectors by name (tenant pool).
func (s *Store) List(ctx context.Context, org string) ([]Row, error) {
	return s.queries.ConnectorList(ctx, s.Tenant, org)
}

// ListEnabled returns org's enabled connectors (tenant pool).
func (s *Store) ListEnabled(ctx context.Context, org string) ([]Row, error) {
	return s.queries.ConnectorListEnabled(ctx, s.Tenant, org)
}

// Create inserts a connector of org and seals its secret, when not empty,
// in the same transaction (tenant pool).
func (s *Store) Create(ctx context.Context, org, by string, f *Fields, secret string) (Row, error) {
	return dbutil.WithTxV(ctx, s.Tenant, func(ctx context.Context, tx pgx.Tx) (Row, error) {
		row, err := s.queries.ConnectorInsert(ctx, tx, dbsqlc.ConnectorInsertParams{
			OrganizationID: org, Name: f.Name, Url: f.URL, AuthType: f.AuthType, AuthHeader: f.AuthHeader,
			RiskPolicy: f.RiskPolicy, Enabled: f.Enabled, CreatedBy: by,
		})
		if err != nil {
			return row, err
		}
		return row, s.Seal(ctx, tx, org, mcp.SourceID(row.ID), by, Secret{Value: secret})
	})
}

// Update locks a connector of org, has change compute its new fields and
// what becomes of its secret, and writes both in one transaction (tenant
// pool), then runs then (when not nil) in it. notFound is the error when
// org has no such connector.
func (s *Store) Update(ctx context.Context, org, by string, id uuid.UUID, notFound error,
	change func(cur *Row) (*Fields, Secret, error), then func(ctx context.Context, tx pgx.Tx) error) (Row, error) {
	sourceID := mcp.SourceID(id)
	return dbutil.WithTxV(ctx, s.Tenant, func(ctx context.Context, tx pgx.Tx) (Row, error) {
		cur, err := s.queries.ConnectorGetForUpdate(ctx, tx, dbsqlc.ConnectorGetForUpdateParams{ID: id, OrganizationID: org})
		if errors.Is(err, pgx.ErrNoRows) {
			return cur, notFound
		}
		if err != nil {
			return cur, err
		}
		f, secret, err := change(&cur)
		if err != nil {
			return cur, err
		}
		if err := s.Seal(ctx, tx, org, sourceID, by, secret); err != nil {
			return cur, err
		}
		row, err := s.queries.ConnectorUpdate(ctx, tx, dbsqlc.ConnectorUpdateParams{
			ID: id, OrganizationID: org, Name: f.Name, Url: f.URL, AuthType: f.AuthType, AuthHeader: f.AuthHeader,
			RiskPolicy: f.RiskPolicy, Enabled: f.Enabled,
		})
		if err == nil && then != nil {
			err = then(ctx, tx)
		}
		return row, err
	})
}

// SetReviews locks a connector of org and stores the tool reviews review
// computes from the stored ones (tenant pool).
func (s *Store) SetReviews(ctx context.Context, org string, id uuid.UUID, review func(cur []byte) ([]byte, error)) error {
	return dbutil.WithTx(ctx, s.Tenant, func(ctx context.Context, tx pgx.Tx) error {
		cur, err := s.queries.ConnectorGetForUpdate(ctx, tx, dbsqlc.ConnectorGetForUpdateParams{ID: id, OrganizationID: org})
		if err != nil {
			return err
		}
		raw, err := review(cur.ToolRiskOverrides)
		if err != nil {
			return err
		}
		_, err = s.queries.ConnectorSetToolOverrides(ctx, tx, dbsqlc.ConnectorSetToolOverridesParams{ID: cur.ID, OrganizationID: org, ToolRiskOverrides: raw})
		return err
	})
}

// Delete deletes a connector of org and its secret (tenant pool).
func (s *Store) Delete(ctx context.Context, org string, id uuid.UUID, notFound error) error {
	return s.DeleteSource(ctx, org, mcp.SourceID(id), notFound, func(ctx context.Context, tx pgx.Tx) (int64, error) {
		return s.queries.ConnectorDelete(ctx, tx, dbsqlc.ConnectorDeleteParams{ID: id, OrganizationID: org})
	})
}
