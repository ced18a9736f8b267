// Package mcpstore stores the organizations' MCP connectors: the one
// package of the connector kind that runs SQL. Each method reads or writes
// through a fixed pool: the API's methods through the tenant pool, whose
// queries see only the caller's organization (row-level security), and
// Lookup, for the workers, through the privileged pool.
package mcpstore

import (
	"context"
	"errors"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxd/outboxd/executors/mcp"
	"github.com/outboxd/outboxd/internal/domain/credential/credentialstore"
	"github.com/outboxd/outboxd/internal/domain/orgsource"
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
// zero value keeps it.
type Secret struct {
	// Drop deletes it (auth none).
	Drop bool
	// Value, when not empty, replaces it.
	Value string
}

// Store reads and writes connectors.
type Store struct {
	tenant  *pgxpool.Pool
	owner   *pgxpool.Pool
	secrets orgsource.Secrets
	queries *dbsqlc.Queries
}

// New returns a Store on the API's tenant pool and the workers' owner
// pool, sealing secrets in creds.
func New(tenant, owner *pgxpool.Pool, creds *credentialstore.Store) *Store {
	return &Store{tenant: tenant, owner: owner, secrets: orgsource.Secrets{Store: creds}, queries: dbsqlc.New()}
}

// List returns org's connectors by name (tenant pool).
func (s *Store) List(ctx context.Context, org string) ([]Row, error) {
	return s.queries.ConnectorList(ctx, s.tenant, org)
}

// ListEnabled returns org's enabled connectors (tenant pool).
func (s *Store) ListEnabled(ctx context.Context, org string) ([]Row, error) {
	return s.queries.ConnectorListEnabled(ctx, s.tenant, org)
}

// Get returns one connector of org, enabled or not, and false when there
// is none (tenant pool).
func (s *Store) Get(ctx context.Context, org string, id uuid.UUID) (Row, bool, error) {
	return found(s.queries.ConnectorGet(ctx, s.tenant, dbsqlc.ConnectorGetParams{ID: id, OrganizationID: org}))
}

// Lookup is Get for the workers, for any organization (owner pool).
func (s *Store) Lookup(ctx context.Context, org string, id uuid.UUID) (Row, bool, error) {
	return found(s.queries.ConnectorGet(ctx, s.owner, dbsqlc.ConnectorGetParams{ID: id, OrganizationID: org}))
}

func found(row Row, err error) (Row, bool, error) {
	if errors.Is(err, pgx.ErrNoRows) {
		return row, false, nil
	}
	return row, err == nil, err
}

// Create inserts a connector of org and seals its secret, when not empty,
// in the same transaction (tenant pool).
func (s *Store) Create(ctx context.Context, org, by string, f *Fields, secret string) (Row, error) {
	return dbutil.WithTxV(ctx, s.tenant, func(ctx context.Context, tx pgx.Tx) (Row, error) {
		row, err := s.queries.ConnectorInsert(ctx, tx, dbsqlc.ConnectorInsertParams{
			OrganizationID: org, Name: f.Name, Url: f.URL, AuthType: f.AuthType, AuthHeader: f.AuthHeader,
			RiskPolicy: f.RiskPolicy, Enabled: f.Enabled, CreatedBy: by,
		})
		if err != nil || secret == "" {
			return row, err
		}
		return row, s.secrets.Seal(ctx, tx, org, mcp.SourceID(row.ID), secret, by)
	})
}

// Update locks a connector of org, has change compute its new fields and
// what becomes of its secret, and writes both in one transaction (tenant
// pool). notFound is the error when org has no such connector.
func (s *Store) Update(ctx context.Context, org, by string, id uuid.UUID, notFound error,
	change func(cur *Row) (*Fields, Secret, error)) (Row, error) {
	sourceID := mcp.SourceID(id)
	return dbutil.WithTxV(ctx, s.tenant, func(ctx context.Context, tx pgx.Tx) (Row, error) {
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
		switch {
		case secret.Drop:
			err = s.secrets.Drop(ctx, tx, org, sourceID)
		case secret.Value != "":
			err = s.secrets.Seal(ctx, tx, org, sourceID, secret.Value, by)
		}
		if err != nil {
			return cur, err
		}
		return s.queries.ConnectorUpdate(ctx, tx, dbsqlc.ConnectorUpdateParams{
			ID: id, OrganizationID: org, Name: f.Name, Url: f.URL, AuthType: f.AuthType, AuthHeader: f.AuthHeader,
			RiskPolicy: f.RiskPolicy, Enabled: f.Enabled,
		})
	})
}

// SetReviews locks a connector of org and stores the tool reviews review
// computes from the stored ones (tenant pool).
func (s *Store) SetReviews(ctx context.Context, org string, id uuid.UUID, review func(cur []byte) ([]byte, error)) error {
	return dbutil.WithTx(ctx, s.tenant, func(ctx context.Context, tx pgx.Tx) error {
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
	return s.secrets.Delete(ctx, s.tenant, org, mcp.SourceID(id), notFound, func(ctx context.Context, tx pgx.Tx) (int64, error) {
		return s.queries.ConnectorDelete(ctx, tx, dbsqlc.ConnectorDeleteParams{ID: id, OrganizationID: org})
	})
}
