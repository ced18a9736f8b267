// Package connectors is the MCP connector kind of org-registered source:
// the connectors an organization adds (CRUD, validation, the admin review
// of their tools), and the catalog's view of them (Kind). Its rows live in
// mcpstore; it calls servers through the mcp client.
package connectors

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outboxd/outboxd/executors/mcp"
	"github.com/outboxd/outboxd/executors/mcp/mcpstore"
	"github.com/outboxd/outboxd/internal/domain/catalog"
	"github.com/outboxd/outboxd/internal/domain/credential"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/orgsource"
	"github.com/outboxd/outboxd/policy"
)

// SecretStore resolves connector secrets: always the encrypted store, also
// when provider tokens come from a broker. CallerToken reads for the API,
// as the caller's organization; Token for the workers, for any
// organization.
type SecretStore interface {
	CallerToken(ctx context.Context, req credential.Request, refresh bool) (credential.Token, error)
	Token(ctx context.Context, req credential.Request, refresh bool) (credential.Token, error)
}

// tokenFunc is one of SecretStore's two readers.
type tokenFunc func(ctx context.Context, req credential.Request, refresh bool) (credential.Token, error)

// Deps are the service's collaborators.
type Deps struct {
	Store  *mcpstore.Store
	Client *mcp.Client
	// Secrets resolves the connectors' secrets.
	Secrets SecretStore
	// Modes returns org's mode overrides by "<source>:<action>", which the
	// tool review shows resolved.
	Modes func(ctx context.Context, org string) (map[string]policy.Mode, error)
	// Grants revokes the grants of a connector given another server or
	// secret, in that change's transaction; nil revokes none.
	Grants orgsource.GrantRevoker
	// MaxPerOrg is how many connectors one organization may have
	// (connectors.max_per_org); default DefaultMaxPerOrg. Each enabled one
	// is listed (its server called) for the organization's catalog, and
	// gets a rate bucket of its own.
	MaxPerOrg int
}

// DefaultMaxPerOrg is Deps.MaxPerOrg's default.
const DefaultMaxPerOrg = 50

// Service manages an organization's MCP connectors.
type Service struct {
	store   *mcpstore.Store
	client  *mcp.Client
	secrets SecretStore
	modes   func(ctx context.Context, org string) (map[string]policy.Mode, error)
	grants  orgsource.GrantRevoker
	max     int
}

// New returns a Service.
func New(deps *Deps) *Service {
	return &Service{store: deps.Store, client: deps.Client, secrets: deps.Secrets, modes: deps.Modes, grants: deps.Grants,
		max: cmp.Or(deps.MaxPerOrg, DefaultMaxPerOrg)}
}

// Input creates or patches a connector; nil fields are unchanged on patch.
type Input struct {
	Name       *string
	URL        *string
	Transport  *string
	Auth       *Auth
	Enabled    *bool
	RiskPolicy *mcp.RiskPolicy
}

// Auth is how outboxd authenticates to the server. Secret is write-only:
// stored sealed, never returned.
type Auth struct {
	Type       mcp.AuthType
	HeaderName string
	Secret     *string
}

// View is what the service shows of a connector: never its secret.
type View struct {
	ID       uuid.UUID
	SourceID string
	Name     string
	URL      string
	// Transport is remote_http.
	Transport string
	// AuthType and AuthHeader are how outboxd authenticates (Auth without
	// its secret).
	AuthType, AuthHeader string
	Enabled              bool
	RiskPolicy           mcp.RiskPolicy
	// ToolRiskOverrides are the admin's reviews of the connector's tools,
	// by tool name; empty, not nil, when there are none.
	ToolRiskOverrides map[string]catalog.Review
	CreatedBy         string
	CreatedAt         time.Time
	UpdatedAt         time.Time
}

func view(row *mcpstore.Row) View {
	v := View{
		ID: row.ID, SourceID: mcp.SourceID(row.ID), Name: row.Name, URL: row.Url, Transport: row.Transport,
		AuthType: row.AuthType, AuthHeader: row.AuthHeader,
		Enabled: row.Enabled, CreatedBy: row.CreatedBy, CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt,
	}
	_ = json.Unmarshal(row.RiskPolicy, &v.RiskPolicy)
	_ = json.Unmarshal(row.ToolRiskOverrides, &v.ToolRiskOverrides)
	if v.ToolRiskOverrides == nil {
		v.ToolRiskOverrides = map[string]catalog.Review{}
	}
	return v
}

// fields are a connector's stored fields before validation.
type fields struct {
	name, url, authType, authHeader string
	enabled                         bool
	riskPolicy                      mcp.RiskPolicy
}

func (f *fields) apply(in *Input) {
	if in.Name != nil {
		f.name = strings.TrimSpace(*in.Name)
	}
	if in.URL != nil {
		f.url = strings.TrimSpace(*in.URL)
	}
	if in.Auth != nil {
		f.authType, f.authHeader = string(in.Auth.Type), in.Auth.HeaderName
		if f.authType == "" {
			f.authType = string(mcp.AuthNone)
		}
	}
	if in.Enabled != nil {
		f.enabled = *in.Enabled
	}
	if in.RiskPolicy != nil {
		f.riskPolicy = *in.RiskPolicy
	}
}

// stored returns f as the store writes it.
func (f *fields) stored() *mcpstore.Fields {
	policyJSON, _ := json.Marshal(f.riskPolicy)
	return &mcpstore.Fields{Name: f.name, URL: f.url, AuthType: f.authType, AuthHeader: f.authHeader, RiskPolicy: policyJSON, Enabled: f.enabled}
}

func (s *Service) check(f *fields, in *Input) error {
	if err := orgsource.CheckName(f.name); err != nil {
		return err
	}
	if err := orgsource.CheckURLLength(f.url); err != nil {
		return err
	}
	if in.Auth != nil && in.Auth.Secret != nil {
		if err := mcp.CheckSecret(*in.Auth.Secret); err != nil {
			return errs.Invalid("auth.secret", "auth.secret cannot be sent as an HTTP header value: %s", err.Error())
		}
	}
	if in.Transport != nil && *in.Transport != "remote_http" {
		return errs.Invalid("transport", "transport must be remote_http")
	}
	conn := &mcp.Connector{URL: f.url, Auth: mcp.Auth{Type: mcp.AuthType(f.authType), HeaderName: f.authHeader}, RiskPolicy: f.riskPolicy}
	if err := s.client.CheckConnector(conn); err != nil {
		field := "auth"
		switch {
		case strings.HasPrefix(err.Error(), "auth header_name"):
			field = "auth.header_name"
		case strings.Contains(err.Error(), "URL") || strings.Contains(err.Error(), "url"):
			field = "url"
		case strings.Contains(err.Error(), "risk_policy"):
			field = "risk_policy"
		}
		return errs.Invalid(field, "%s", err.Error())
	}
	return nil
}

// Create adds an MCP connector for org, with its secret sealed in the
// credential store in the same transaction. One past the organization's
// MaxPerOrg is errs.Conflict and is not kept.
func (s *Service) Create(ctx context.Context, org, by string, in *Input) (View, error) {
	f := fields{authType: string(mcp.AuthNone), enabled: true}
	f.apply(in)
	if err := s.check(&f, in); err != nil {
		return View{}, err
	}
	secret := ""
	if in.Auth != nil && in.Auth.Secret != nil {
		secret = *in.Auth.Secret
	}
	if f.authType != string(mcp.AuthNone) && secret == "" {
		return View{}, errs.Invalid("auth.secret", "auth.secret is required for %s auth", f.authType)
	}
	row, err := s.store.Create(ctx, org, by, f.stored(), secret)
	if orgsource.IsConflict(err) {
		return View{}, fmt.Errorf("%w: a connector named %q exists", errs.Conflict, f.name)
	}
	if err != nil {
		return View{}, fmt.Errorf("creating connector: %w", err)
	}
	err = orgsource.KeepWithinCap(ctx, s.max, "connectors", "connectors.max_per_org",
		func(ctx context.Context) (int, error) {
			rows, err := s.store.List(ctx, org)
			return len(rows), err
		},
		func(ctx context.Context) error {
			return s.store.Delete(ctx, org, row.ID, orgsource.NotFound("connector", row.ID.String()))
		})
	if err != nil {
		return View{}, err
	}
	return view(&row), nil
}

// Update patches a connector. A new secret replaces the old one; switching
// to auth none drops it. Another url or auth means another server or
// another credential: the grants of its tools, made for the old one, are
// revoked in the same transaction, and revoked are their ids.
func (s *Service) Update(ctx context.Context, org, id, by string, in *Input) (v View, revoked []uuid.UUID, err error) {
	uid, err := parseID(id)
	if err != nil {
		return View{}, nil, err
	}
	var then func(ctx context.Context, tx pgx.Tx) error
	if s.grants != nil && (in.Auth != nil || in.URL != nil) {
		then = func(ctx context.Context, tx pgx.Tx) (err error) {
			revoked, err = s.grants.RevokeSource(ctx, tx, org, mcp.SourceID(uid))
			return err
		}
	}
	row, err := s.store.Update(ctx, org, by, uid, orgsource.NotFound("connector", id), func(cur *mcpstore.Row) (*mcpstore.Fields, mcpstore.Secret, error) {
		conn, err := connector(cur)
		if err != nil {
			return nil, mcpstore.Secret{}, err
		}
		f := fields{name: cur.Name, url: cur.Url, authType: cur.AuthType, authHeader: cur.AuthHeader, enabled: cur.Enabled, riskPolicy: conn.RiskPolicy}
		f.apply(in)
		if err := s.check(&f, in); err != nil {
			return nil, mcpstore.Secret{}, err
		}
		var secret mcpstore.Secret
		switch {
		case f.authType == string(mcp.AuthNone):
			secret.Drop = true
		case in.Auth != nil && in.Auth.Secret != nil && *in.Auth.Secret != "":
			secret.Value = *in.Auth.Secret
		case cur.AuthType == string(mcp.AuthNone):
			return nil, secret, errs.Invalid("auth.secret", "auth.secret is required for %s auth", f.authType)
		}
		return f.stored(), secret, nil
	}, then)
	if orgsource.IsConflict(err) {
		return View{}, nil, fmt.Errorf("%w: another connector has that name", errs.Conflict)
	}
	if err != nil {
		return View{}, nil, err
	}
	s.client.Invalidate(uid)
	return view(&row), revoked, nil
}

// Delete removes a connector and its secret.
func (s *Service) Delete(ctx context.Context, org, id string) error {
	uid, err := parseID(id)
	if err != nil {
		return err
	}
	if err := s.store.Delete(ctx, org, uid, orgsource.NotFound("connector", id)); err != nil {
		return err
	}
	s.client.Invalidate(uid)
	return nil
}

// Get returns one connector of org.
func (s *Service) Get(ctx context.Context, org, id string) (View, error) {
	row, err := s.row(ctx, org, id)
	if err != nil {
		return View{}, err
	}
	return view(&row), nil
}

// List returns org's connectors by name.
func (s *Service) List(ctx context.Context, org string) ([]View, error) {
	rows, err := s.store.List(ctx, org)
	if err != nil {
		return nil, fmt.Errorf("listing connectors: %w", err)
	}
	views := make([]View, len(rows))
	for i := range rows {
		views[i] = view(&rows[i])
	}
	return views, nil
}

// Validate connects to a connector's server and lists its tools, bypassing
// the cache and saving nothing.
func (s *Service) Validate(ctx context.Context, org, id string) (mcp.Diagnostics, error) {
	src, err := s.apiSource(ctx, org, id)
	if err != nil {
		return mcp.Diagnostics{}, err
	}
	secret, err := src.secret(ctx)
	if err != nil {
		return mcp.Diagnostics{Errors: []string{"resolving the connector secret: " + err.Error()}}, nil
	}
	return s.client.Validate(ctx, src.conn, secret), nil
}

func (s *Service) row(ctx context.Context, org, id string) (mcpstore.Row, error) {
	uid, err := parseID(id)
	if err != nil {
		return mcpstore.Row{}, err
	}
	row, ok, err := s.store.Get(ctx, org, uid)
	if err == nil && !ok {
		err = orgsource.NotFound("connector", id)
	}
	return row, err
}

// apiSource resolves a connector of org as a source, enabled or not, for
// the API.
func (s *Service) apiSource(ctx context.Context, org, id string) (*source, error) {
	row, err := s.row(ctx, org, id)
	if err != nil {
		return nil, err
	}
	return s.source(&row, s.secrets.CallerToken)
}

func parseID(id string) (uuid.UUID, error) {
	return orgsource.ParseID(id, mcp.SourcePrefix, "connector")
}
