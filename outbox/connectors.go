package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/mcp"
	"github.com/outboxd/outboxd/internal/domain/catalog"
	"github.com/outboxd/outboxd/internal/domain/credential"
	"github.com/outboxd/outboxd/internal/platform/dbsqlc"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
	"github.com/outboxd/outboxd/policy"
)

// ConnectorInput creates or patches a connector; nil fields are unchanged
// on patch.
type ConnectorInput struct {
	Name       *string         `json:"name"`
	URL        *string         `json:"url"`
	Transport  *string         `json:"transport"`
	Auth       *ConnectorAuth  `json:"auth"`
	Enabled    *bool           `json:"enabled"`
	RiskPolicy *mcp.RiskPolicy `json:"risk_policy"`
}

// ConnectorAuth is how outboxd authenticates to the server. Secret is
// write-only: stored sealed, never returned.
type ConnectorAuth struct {
	Type       mcp.AuthType `json:"type"`
	HeaderName string       `json:"header_name,omitempty"`
	Secret     *string      `json:"secret,omitempty"`
}

// ConnectorView is a connector as the API shows it: never its secret.
type ConnectorView struct {
	ID                uuid.UUID                 `json:"id"`
	SourceID          string                    `json:"source_id"`
	Name              string                    `json:"name"`
	URL               string                    `json:"url"`
	Transport         string                    `json:"transport"`
	Auth              connectorAuthView         `json:"auth"`
	Enabled           bool                      `json:"enabled"`
	RiskPolicy        mcp.RiskPolicy            `json:"risk_policy"`
	ToolRiskOverrides map[string]catalog.Review `json:"tool_risk_overrides"`
	CreatedBy         string                    `json:"created_by"`
	CreatedAt         time.Time                 `json:"created_at"`
	UpdatedAt         time.Time                 `json:"updated_at"`
}

type connectorAuthView struct {
	Type       string `json:"type"`
	HeaderName string `json:"header_name,omitempty"`
}

func viewConnector(row dbsqlc.OrgConnector) ConnectorView {
	v := ConnectorView{
		ID: row.ID, SourceID: catalog.SourceID(row.ID), Name: row.Name, URL: row.Url, Transport: row.Transport,
		Auth:    connectorAuthView{Type: row.AuthType, HeaderName: row.AuthHeader},
		Enabled: row.Enabled, CreatedBy: row.CreatedBy, CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt,
	}
	_ = json.Unmarshal(row.RiskPolicy, &v.RiskPolicy)
	_ = json.Unmarshal(row.ToolRiskOverrides, &v.ToolRiskOverrides)
	if v.ToolRiskOverrides == nil {
		v.ToolRiskOverrides = map[string]catalog.Review{}
	}
	return v
}

// connectorFields are a connector's stored fields before validation.
type connectorFields struct {
	name, url, authType, authHeader string
	enabled                         bool
	riskPolicy                      mcp.RiskPolicy
}

func (f *connectorFields) apply(in *ConnectorInput) {
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

// maxURLBytes bounds a connector's or a registered database's URL.
const maxURLBytes = 2048

func (s *Service) checkConnector(f *connectorFields, in *ConnectorInput) error {
	if f.name == "" || len(f.name) > 100 {
		return invalid("name", "name is required (at most 100 characters)")
	}
	if len(f.url) > maxURLBytes {
		return invalid("url", "url is longer than %d bytes", maxURLBytes)
	}
	if in.Auth != nil && in.Auth.Secret != nil {
		if err := mcp.CheckSecret(*in.Auth.Secret); err != nil {
			return invalid("auth.secret", "auth.secret cannot be sent as an HTTP header value: %s", err.Error())
		}
	}
	if in.Transport != nil && *in.Transport != "remote_http" {
		return invalid("transport", "transport must be remote_http")
	}
	conn := &mcp.Connector{URL: f.url, Auth: mcp.Auth{Type: mcp.AuthType(f.authType), HeaderName: f.authHeader}, RiskPolicy: f.riskPolicy}
	if err := s.deps.Sources.MCP().CheckConnector(conn); err != nil {
		field := "auth"
		switch {
		case strings.HasPrefix(err.Error(), "auth header_name"):
			field = "auth.header_name"
		case strings.Contains(err.Error(), "URL") || strings.Contains(err.Error(), "url"):
			field = "url"
		case strings.Contains(err.Error(), "risk_policy"):
			field = "risk_policy"
		}
		return invalid(field, "%s", err.Error())
	}
	return nil
}

// CreateConnector adds an MCP connector for org, with its secret sealed in
// the credential store in the same transaction.
func (s *Service) CreateConnector(ctx context.Context, org, by string, in *ConnectorInput) (ConnectorView, error) {
	f := connectorFields{authType: string(mcp.AuthNone), enabled: true}
	f.apply(in)
	if err := s.checkConnector(&f, in); err != nil {
		return ConnectorView{}, err
	}
	secret := ""
	if in.Auth != nil && in.Auth.Secret != nil {
		secret = *in.Auth.Secret
	}
	if f.authType != string(mcp.AuthNone) && secret == "" {
		return ConnectorView{}, invalid("auth.secret", "auth.secret is required for %s auth", f.authType)
	}
	policyJSON, _ := json.Marshal(f.riskPolicy)
	row, err := dbutil.WithTxV(ctx, s.deps.Pool, func(ctx context.Context, tx pgx.Tx) (dbsqlc.OrgConnector, error) {
		row, err := s.queries.ConnectorInsert(ctx, tx, dbsqlc.ConnectorInsertParams{
			OrganizationID: org, Name: f.name, Url: f.url, AuthType: f.authType, AuthHeader: f.authHeader,
			RiskPolicy: policyJSON, Enabled: f.enabled, CreatedBy: by,
		})
		if err != nil {
			return row, err
		}
		if secret != "" {
			_, err = s.deps.Credentials.PutTx(ctx, tx, credential.Request{Org: org, Integration: catalog.SourceID(row.ID)}, credential.Token{Value: secret}, by)
		}
		return row, err
	})
	if isUniqueViolation(err) {
		return ConnectorView{}, fmt.Errorf("%w: a connector named %q exists", ErrConflict, f.name)
	}
	if err != nil {
		return ConnectorView{}, fmt.Errorf("creating connector: %w", err)
	}
	return viewConnector(row), nil
}

// UpdateConnector patches a connector. A new secret replaces the old one;
// switching to auth none drops it.
func (s *Service) UpdateConnector(ctx context.Context, org, id, by string, in *ConnectorInput) (ConnectorView, error) {
	uid, err := parseConnectorID(id)
	if err != nil {
		return ConnectorView{}, err
	}
	row, err := dbutil.WithTxV(ctx, s.deps.Pool, func(ctx context.Context, tx pgx.Tx) (dbsqlc.OrgConnector, error) {
		cur, err := s.queries.ConnectorGetForUpdate(ctx, tx, dbsqlc.ConnectorGetForUpdateParams{ID: uid, OrganizationID: org})
		if errors.Is(err, pgx.ErrNoRows) {
			return cur, fmt.Errorf("%w: connector %s", ErrNotFound, id)
		}
		if err != nil {
			return cur, err
		}
		conn, err := catalog.Connector(cur)
		if err != nil {
			return cur, err
		}
		f := connectorFields{name: cur.Name, url: cur.Url, authType: cur.AuthType, authHeader: cur.AuthHeader, enabled: cur.Enabled, riskPolicy: conn.RiskPolicy}
		f.apply(in)
		if err := s.checkConnector(&f, in); err != nil {
			return cur, err
		}
		source := catalog.SourceID(uid)
		switch {
		case f.authType == string(mcp.AuthNone):
			if err := s.queries.CredentialDelete(ctx, tx, dbsqlc.CredentialDeleteParams{OrganizationID: org, Integration: source}); err != nil {
				return cur, err
			}
		case in.Auth != nil && in.Auth.Secret != nil && *in.Auth.Secret != "":
			if _, err := s.deps.Credentials.PutTx(ctx, tx, credential.Request{Org: org, Integration: source}, credential.Token{Value: *in.Auth.Secret}, by); err != nil {
				return cur, err
			}
		case cur.AuthType == string(mcp.AuthNone):
			return cur, invalid("auth.secret", "auth.secret is required for %s auth", f.authType)
		}
		policyJSON, _ := json.Marshal(f.riskPolicy)
		return s.queries.ConnectorUpdate(ctx, tx, dbsqlc.ConnectorUpdateParams{
			ID: uid, OrganizationID: org, Name: f.name, Url: f.url, AuthType: f.authType, AuthHeader: f.authHeader,
			RiskPolicy: policyJSON, Enabled: f.enabled,
		})
	})
	if isUniqueViolation(err) {
		return ConnectorView{}, fmt.Errorf("%w: another connector has that name", ErrConflict)
	}
	if err != nil {
		return ConnectorView{}, err
	}
	s.invalidate(uid)
	return viewConnector(row), nil
}

// DeleteConnector removes a connector and its secret.
func (s *Service) DeleteConnector(ctx context.Context, org, id string) error {
	uid, err := parseConnectorID(id)
	if err != nil {
		return err
	}
	err = dbutil.WithTx(ctx, s.deps.Pool, func(ctx context.Context, tx pgx.Tx) error {
		n, err := s.queries.ConnectorDelete(ctx, tx, dbsqlc.ConnectorDeleteParams{ID: uid, OrganizationID: org})
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("%w: connector %s", ErrNotFound, id)
		}
		return s.queries.CredentialDelete(ctx, tx, dbsqlc.CredentialDeleteParams{OrganizationID: org, Integration: catalog.SourceID(uid)})
	})
	if err == nil {
		s.invalidate(uid)
	}
	return err
}

// GetConnector returns one connector of org.
func (s *Service) GetConnector(ctx context.Context, org, id string) (ConnectorView, error) {
	row, err := s.connectorRow(ctx, org, id)
	if err != nil {
		return ConnectorView{}, err
	}
	return viewConnector(row), nil
}

// ListConnectors returns org's connectors by name.
func (s *Service) ListConnectors(ctx context.Context, org string) ([]ConnectorView, error) {
	rows, err := s.queries.ConnectorList(ctx, s.deps.Pool, org)
	if err != nil {
		return nil, fmt.Errorf("listing connectors: %w", err)
	}
	views := make([]ConnectorView, len(rows))
	for i, r := range rows {
		views[i] = viewConnector(r)
	}
	return views, nil
}

// ValidateConnector connects to a connector's server and lists its tools,
// bypassing the cache and saving nothing.
func (s *Service) ValidateConnector(ctx context.Context, org, id string) (mcp.Diagnostics, error) {
	src, err := s.connectorSource(ctx, org, id)
	if err != nil {
		return mcp.Diagnostics{}, err
	}
	secret, err := src.Secret(ctx)
	if err != nil {
		return mcp.Diagnostics{Errors: []string{"resolving the connector secret: " + err.Error()}}, nil
	}
	conn, err := catalog.Connector(src.Row)
	if err != nil {
		return mcp.Diagnostics{}, err
	}
	return s.deps.Sources.MCP().Validate(ctx, conn, secret), nil
}

// ToolReview is a connector tool with its review state.
type ToolReview struct {
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	RiskTier     policy.Tier     `json:"risk_tier"`
	RiskLevel    string          `json:"risk_level"`
	Hash         string          `json:"hash"`
	Mode         policy.Mode     `json:"mode"`
	ModeSource   string          `json:"mode_source"`
	ReviewedMode string          `json:"reviewed_mode,omitempty"`
	ReviewedHash string          `json:"reviewed_hash,omitempty"`
	Drifted      bool            `json:"drifted"`
	Params       json.RawMessage `json:"params"`
}

// ConnectorTools lists a connector's tools with their current hash, the
// reviewed mode and hash, and whether they drifted.
func (s *Service) ConnectorTools(ctx context.Context, org, id string) ([]ToolReview, error) {
	src, err := s.connectorSource(ctx, org, id)
	if err != nil {
		return nil, err
	}
	defs, err := src.ListActions(ctx, executors.ExecContext{OrganizationID: org})
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrSourceUnavailable, err)
	}
	orgModes, err := s.GetModes(ctx, org, "")
	if err != nil {
		return nil, err
	}
	out := make([]ToolReview, 0, len(defs))
	for _, d := range defs {
		hash, err := policy.DefinitionHash(d.Params)
		if err != nil {
			return nil, fmt.Errorf("hashing tool %s: %w", d.ID, err)
		}
		res, drifted := resolveMode(catalog.Action{Source: src.Entry(), Definition: d}, policy.ModeInput{OrgDefault: string(orgModes[src.ID()+":"+d.ID])})
		rv := src.Reviewed[d.ID]
		tier := policy.TierOf(string(d.Tier))
		out = append(out, ToolReview{
			Name: d.ID, Description: d.Description, RiskTier: tier, RiskLevel: tier.Risk(), Hash: hash, Params: d.Params,
			Mode: res.Mode, ModeSource: string(res.Source), ReviewedMode: rv.Mode, ReviewedHash: rv.Hash, Drifted: drifted,
		})
	}
	return out, nil
}

// ReviewConnectorTools confirms modes for tools: each is stored with the
// tool's current definition hash, which re-arms the drift guard. Tools not
// named keep their review.
func (s *Service) ReviewConnectorTools(ctx context.Context, org, id string, modes map[string]string) ([]ToolReview, error) {
	src, err := s.connectorSource(ctx, org, id)
	if err != nil {
		return nil, err
	}
	defs, err := src.ListActions(ctx, executors.ExecContext{OrganizationID: org})
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrSourceUnavailable, err)
	}
	hashes := make(map[string]string, len(defs))
	for _, d := range defs {
		if hashes[d.ID], err = policy.DefinitionHash(d.Params); err != nil {
			return nil, err
		}
	}
	var fieldErrs []executors.FieldError
	names := make([]string, 0, len(modes))
	for name := range modes {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if _, ok := hashes[name]; !ok {
			fieldErrs = append(fieldErrs, executors.FieldError{Field: name, Message: "the connector has no such tool"})
		} else if _, ok := policy.ParseMode(modes[name]); !ok {
			fieldErrs = append(fieldErrs, executors.FieldError{Field: name, Message: fmt.Sprintf("invalid mode %q: use allow, deny or require_approval", modes[name])})
		}
	}
	if len(fieldErrs) > 0 {
		return nil, &ValidationError{Message: "invalid tool review", Fields: fieldErrs}
	}
	err = dbutil.WithTx(ctx, s.deps.Pool, func(ctx context.Context, tx pgx.Tx) error {
		cur, err := s.queries.ConnectorGetForUpdate(ctx, tx, dbsqlc.ConnectorGetForUpdateParams{ID: src.Row.ID, OrganizationID: org})
		if err != nil {
			return err
		}
		reviewed := map[string]catalog.Review{}
		if err := json.Unmarshal(cur.ToolRiskOverrides, &reviewed); err != nil {
			return err
		}
		for name, mode := range modes {
			reviewed[name] = catalog.Review{Mode: mode, Hash: hashes[name]}
		}
		raw, _ := json.Marshal(reviewed)
		_, err = s.queries.ConnectorSetToolOverrides(ctx, tx, dbsqlc.ConnectorSetToolOverridesParams{ID: cur.ID, OrganizationID: org, ToolRiskOverrides: raw})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("storing tool review: %w", err)
	}
	return s.ConnectorTools(ctx, org, id)
}

func (s *Service) connectorRow(ctx context.Context, org, id string) (dbsqlc.OrgConnector, error) {
	uid, err := parseConnectorID(id)
	if err != nil {
		return dbsqlc.OrgConnector{}, err
	}
	row, err := s.queries.ConnectorGet(ctx, s.deps.Pool, dbsqlc.ConnectorGetParams{ID: uid, OrganizationID: org})
	if errors.Is(err, pgx.ErrNoRows) {
		return row, fmt.Errorf("%w: connector %s", ErrNotFound, id)
	}
	return row, err
}

// connectorSource resolves a connector as a source, enabled or not.
func (s *Service) connectorSource(ctx context.Context, org, id string) (*catalog.ConnectorSource, error) {
	row, err := s.connectorRow(ctx, org, id)
	if err != nil {
		return nil, err
	}
	return s.deps.Sources.ConnectorSource(row)
}

func (s *Service) invalidate(id uuid.UUID) {
	if c := s.deps.Sources.MCP(); c != nil {
		c.Invalidate(id)
	}
}

func parseConnectorID(id string) (uuid.UUID, error) {
	uid, err := uuid.Parse(strings.TrimPrefix(id, mcp.SourcePrefix))
	if err != nil {
		return uuid.Nil, fmt.Errorf("%w: connector %s", ErrNotFound, id)
	}
	return uid, nil
}
