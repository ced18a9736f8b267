// Package catalog resolves source ids for an organization: the static
// provider sources (Slack, Linear, Sentry, GitHub) plus the organization's
// enabled MCP connectors, each wrapped with the connector row it came from,
// and its registered databases.
// The API and the workers resolve through it, so a connector added in one
// process is usable by every other at once.
package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/database"
	"github.com/outboxd/outboxd/executors/mcp"
	"github.com/outboxd/outboxd/internal/domain/credential"
	"github.com/outboxd/outboxd/internal/platform/dbsqlc"
)

// ErrNotFound is returned for a source id the organization cannot use.
var ErrNotFound = errors.New("source not found")

// SecretStore resolves connector secrets: always the encrypted store, also
// when provider tokens come from a broker.
type SecretStore interface {
	Token(ctx context.Context, req credential.Request, refresh bool) (credential.Token, error)
}

// Catalog resolves sources per organization.
type Catalog struct {
	static  *executors.Registry
	sources map[string]*Source
	// added are the ids of the sources added with Add, in order.
	added []string
	pool  *pgxpool.Pool
	mcp   *mcp.Client
	// databases runs the organizations' databases; nil when off.
	databases *database.Client
	secrets   SecretStore
	queries   *dbsqlc.Queries
}

// New returns a Catalog. With mcpClient nil, connectors are not resolved.
func New(static *executors.Registry, pool *pgxpool.Pool, mcpClient *mcp.Client, secrets SecretStore) *Catalog {
	c := &Catalog{static: static, sources: map[string]*Source{}, pool: pool, mcp: mcpClient, secrets: secrets, queries: dbsqlc.New()}
	for _, id := range static.IDs() {
		s, _ := static.Source(id)
		entry := &Source{Source: s, NeedsCredential: true, Bucket: static.Bucket(id)}
		if p, ok := static.Provider(id); ok {
			entry.Name, entry.Guide, entry.NeedsCredential = p.Name, p.Guide, !p.NoCredential
		}
		c.sources[id] = entry
	}
	return c
}

// Add adds a source that is not a provider, such as the plugins, with
// what the rest of the system needs to know about it. A duplicate id is
// an error.
func (c *Catalog) Add(s *Source) error {
	if _, dup := c.sources[s.ID()]; dup {
		return fmt.Errorf("source %s is already registered", s.ID())
	}
	c.sources[s.ID()] = s
	c.added = append(c.added, s.ID())
	return nil
}

// WithDatabases makes the organizations' registered databases sources,
// run by client, and returns c.
func (c *Catalog) WithDatabases(client *database.Client) *Catalog {
	c.databases = client
	return c
}

// Databases returns the database client (nil when databases are off).
func (c *Catalog) Databases() *database.Client { return c.databases }

// MCP returns the connector client (nil when connectors are off).
func (c *Catalog) MCP() *mcp.Client { return c.mcp }

// Static returns the provider sources.
func (c *Catalog) Static() *executors.Registry { return c.static }

// Source returns the source id for org.
func (c *Catalog) Source(ctx context.Context, org, id string) (*Source, error) {
	if s, ok := c.sources[id]; ok {
		return s, nil
	}
	if dbID, ok := database.ParseSourceID(id); ok && c.databases != nil {
		row, err := c.queries.DatabaseGet(ctx, c.pool, dbsqlc.DatabaseGetParams{ID: dbID, OrganizationID: org})
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
		}
		if err != nil {
			return nil, fmt.Errorf("loading database: %w", err)
		}
		return c.DatabaseSource(row), nil
	}
	rawID, ok := strings.CutPrefix(id, mcp.SourcePrefix)
	if !ok || c.mcp == nil {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	uid, err := uuid.Parse(rawID)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	row, err := c.queries.ConnectorGet(ctx, c.pool, dbsqlc.ConnectorGetParams{ID: uid, OrganizationID: org})
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && !row.Enabled) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return nil, fmt.Errorf("loading connector: %w", err)
	}
	conn, err := c.ConnectorSource(row)
	if err != nil {
		return nil, err
	}
	return conn.Entry(), nil
}

// List returns the static sources, the added ones, the organization's
// databases and its enabled connectors, in that order.
func (c *Catalog) List(ctx context.Context, org string) ([]*Source, error) {
	var out []*Source
	for _, id := range append(c.static.IDs(), c.added...) {
		out = append(out, c.sources[id])
	}
	if c.databases != nil {
		rows, err := c.queries.DatabaseList(ctx, c.pool, org)
		if err != nil {
			return nil, fmt.Errorf("listing databases: %w", err)
		}
		for _, row := range rows {
			out = append(out, c.DatabaseSource(row))
		}
	}
	if c.mcp == nil {
		return out, nil
	}
	rows, err := c.queries.ConnectorListEnabled(ctx, c.pool, org)
	if err != nil {
		return nil, fmt.Errorf("listing connectors: %w", err)
	}
	for _, row := range rows {
		s, err := c.ConnectorSource(row)
		if err != nil {
			return nil, err
		}
		out = append(out, s.Entry())
	}
	return out, nil
}

// ConnectorSource wraps a connector row as a source, whether enabled or not.
func (c *Catalog) ConnectorSource(row dbsqlc.OrgConnector) (*ConnectorSource, error) {
	if c.mcp == nil {
		return nil, fmt.Errorf("%w: connectors are not configured", ErrNotFound)
	}
	conn, err := Connector(row)
	if err != nil {
		return nil, err
	}
	var reviewed map[string]Review
	if err := json.Unmarshal(row.ToolRiskOverrides, &reviewed); err != nil {
		return nil, fmt.Errorf("connector %s: tool_risk_overrides: %w", row.ID, err)
	}
	return &ConnectorSource{Source: c.mcp.Source(conn), Row: row, Reviewed: reviewed, secrets: c.secrets}, nil
}

// DatabaseSource wraps a database row as a source. Its URL is its
// credential, which the worker resolves before each call like a
// provider's token.
func (c *Catalog) DatabaseSource(row dbsqlc.OrgDatabase) *Source {
	src := c.databases.Source(database.Database{
		ID: row.ID, Name: row.Name, MaxRows: int(row.MaxRows),
		StatementTimeout: time.Duration(row.StatementTimeoutMs) * time.Millisecond,
	})
	return &Source{Source: src, Name: row.Name, NeedsCredential: true, LocalCredential: true, Bucket: database.Bucket.Name, OrgRegistered: true}
}

// Connector turns a row into the MCP package's connector.
func Connector(row dbsqlc.OrgConnector) (*mcp.Connector, error) {
	conn := &mcp.Connector{
		ID: row.ID, Name: row.Name, URL: row.Url,
		Auth: mcp.Auth{Type: mcp.AuthType(row.AuthType), HeaderName: row.AuthHeader},
	}
	if err := json.Unmarshal(row.RiskPolicy, &conn.RiskPolicy); err != nil {
		return nil, fmt.Errorf("connector %s: risk_policy: %w", row.ID, err)
	}
	return conn, nil
}

// SourceID is the source id of a connector.
func SourceID(id uuid.UUID) string { return mcp.SourceID(id) }

// Review is an admin's confirmed mode for a connector tool and the
// definition hash it was confirmed for.
type Review struct {
	Mode string `json:"mode"`
	Hash string `json:"hash"`
}

// Source is a source as the catalog hands it to the rest of the system:
// the source with what policy and the worker need to know about it, so
// that neither asks what kind of source it is.
type Source struct {
	executors.Source
	// Name is the display name; empty when the id is the name.
	Name string
	// Guide is markdown shown at the top of the source's guide, before its
	// actions; empty for none.
	Guide string
	// NeedsCredential says whether calls take a credential, which the worker
	// resolves before each call.
	NeedsCredential bool
	// LocalCredential says its credential is one only outboxd holds (a
	// connector's secret, a database's URL, sealed in outboxd's store when
	// it was registered): the worker reads it from the store even when
	// provider tokens come from a broker.
	LocalCredential bool
	// Bucket is the rate bucket its jobs take when a request names none;
	// "" for none.
	Bucket string
	// OrgRegistered marks a source the organization added itself (an MCP
	// connector, a database). It is listed whether or not a credential is stored for
	// it, and its actions' modes are an admin's to review: until reviewed,
	// an action infers at most require_approval; once reviewed, the
	// reviewed mode stands in for the org default and the drift guard
	// applies.
	OrgRegistered bool
	// Reviews are the admin reviews of its actions, by action id.
	Reviews map[string]Review
	// Disabled, when not empty, says why the source's actions are listed
	// but cannot be invoked (plugins while code execution is off).
	Disabled string
}

// Action is one action as the catalog hands it out: its source and its
// definition.
type Action struct {
	Source     *Source
	Definition executors.Definition
}

// Review returns the admin's review of the action, and false when it has
// none.
func (a Action) Review() (Review, bool) {
	r, ok := a.Source.Reviews[a.Definition.ID]
	return r, ok
}

// ConnectorSource is a connector's action source together with its row.
type ConnectorSource struct {
	executors.Source
	Row      dbsqlc.OrgConnector
	Reviewed map[string]Review
	secrets  SecretStore
}

// Name is the connector's display name.
func (s *ConnectorSource) Name() string { return s.Row.Name }

// Entry returns the connector as the catalog hands it out.
func (s *ConnectorSource) Entry() *Source {
	return &Source{Source: s, Name: s.Name(), NeedsCredential: s.RequiresCredential(), LocalCredential: true, Bucket: mcp.Bucket.Name, OrgRegistered: true, Reviews: s.Reviewed}
}

// RequiresCredential reports whether calls need the connector's secret.
func (s *ConnectorSource) RequiresCredential() bool {
	return s.Row.AuthType != string(mcp.AuthNone)
}

// Secret resolves the connector's secret ("" for auth none).
func (s *ConnectorSource) Secret(ctx context.Context) (string, error) {
	if !s.RequiresCredential() {
		return "", nil
	}
	tok, err := s.secrets.Token(ctx, credential.Request{Org: s.Row.OrganizationID, Integration: s.ID()}, false)
	if err != nil {
		return "", err
	}
	return tok.Value, nil
}

// ListActions lists the connector's tools, resolving its secret first:
// listing happens outside a worker, where nothing else injects it.
func (s *ConnectorSource) ListActions(ctx context.Context, ec executors.ExecContext) ([]executors.Definition, error) {
	secret, err := s.Secret(ctx)
	if err != nil {
		return nil, fmt.Errorf("connector %s secret: %w", s.Row.Name, err)
	}
	ec.Token = secret
	return s.Source.ListActions(ctx, ec)
}
