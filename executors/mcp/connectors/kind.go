package connectors

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/mcp"
	"github.com/outboxd/outboxd/executors/mcp/mcpstore"
	"github.com/outboxd/outboxd/internal/domain/catalog"
	"github.com/outboxd/outboxd/internal/domain/credential"
	"github.com/outboxd/outboxd/internal/domain/errs"
)

// Kind returns the connectors as a kind of source of the catalog.
func (s *Service) Kind() catalog.Kind { return kind{s} }

type kind struct{ s *Service }

func (kind) Prefix() string { return mcp.SourcePrefix }

func (kind) Bucket() string { return mcp.Bucket.Name }

// List returns org's enabled connectors, for the API (tenant pool; the
// API's secrets).
func (k kind) List(ctx context.Context, org string) ([]*catalog.Source, error) {
	rows, err := k.s.store.ListEnabled(ctx, org)
	if err != nil {
		return nil, fmt.Errorf("listing connectors: %w", err)
	}
	out := make([]*catalog.Source, 0, len(rows))
	for _, row := range rows {
		src, err := k.s.source(&row, k.s.secrets.CallerToken)
		if err != nil {
			return nil, err
		}
		out = append(out, src.entry())
	}
	return out, nil
}

// Source resolves an enabled connector of org, for the workers and the
// invoke path (owner pool; the workers' secrets).
func (k kind) Source(ctx context.Context, org, id string) (*catalog.Source, error) {
	rawID, _ := strings.CutPrefix(id, mcp.SourcePrefix)
	uid, err := uuid.Parse(rawID)
	if err != nil {
		return nil, errs.Errorf(errs.NotFound, "source not found: %s", id)
	}
	row, ok, err := k.s.store.Lookup(ctx, org, uid)
	if err != nil {
		return nil, fmt.Errorf("loading connector: %w", err)
	}
	if !ok || !row.Enabled {
		return nil, errs.Errorf(errs.NotFound, "source not found: %s", id)
	}
	src, err := k.s.source(&row, k.s.secrets.Token)
	if err != nil {
		return nil, err
	}
	return src.entry(), nil
}

// source wraps a connector row as a source, whether enabled or not, whose
// secret token resolves.
func (s *Service) source(row *mcpstore.Row, token tokenFunc) (*source, error) {
	conn, err := connector(row)
	if err != nil {
		return nil, err
	}
	var reviewed map[string]catalog.Review
	if err := json.Unmarshal(row.ToolRiskOverrides, &reviewed); err != nil {
		return nil, fmt.Errorf("connector %s: tool_risk_overrides: %w", row.ID, err)
	}
	return &source{Source: s.client.Source(conn), conn: conn, row: *row, reviewed: reviewed, token: token}, nil
}

// connector turns a row into the MCP package's connector.
func connector(row *mcpstore.Row) (*mcp.Connector, error) {
	conn := &mcp.Connector{
		ID: row.ID, Name: row.Name, URL: row.Url,
		Auth: mcp.Auth{Type: mcp.AuthType(row.AuthType), HeaderName: row.AuthHeader},
	}
	if err := json.Unmarshal(row.RiskPolicy, &conn.RiskPolicy); err != nil {
		return nil, fmt.Errorf("connector %s: risk_policy: %w", row.ID, err)
	}
	return conn, nil
}

// source is a connector's action source together with its row.
type source struct {
	executors.Source
	conn     *mcp.Connector
	row      mcpstore.Row
	reviewed map[string]catalog.Review
	token    tokenFunc
}

// Endpoint is the connector's URL (executors.Endpointed): the intent of
// a call names it, so a call approved for one server is not made to
// another.
func (s *source) Endpoint() string { return s.conn.URL }

// entry returns the connector as the catalog hands it out.
func (s *source) entry() *catalog.Source {
	return &catalog.Source{Source: s, Name: s.row.Name, NeedsCredential: s.requiresCredential(), LocalCredential: true,
		Bucket: mcp.Bucket.Name, OrgRegistered: true, Reviews: s.reviewed}
}

// requiresCredential reports whether calls need the connector's secret.
func (s *source) requiresCredential() bool {
	return s.row.AuthType != string(mcp.AuthNone)
}

// secret resolves the connector's secret ("" for auth none).
func (s *source) secret(ctx context.Context) (string, error) {
	if !s.requiresCredential() {
		return "", nil
	}
	tok, err := s.token(ctx, credential.Request{Org: s.row.OrganizationID, Integration: s.ID()}, false)
	if err != nil {
		return "", err
	}
	return tok.Value, nil
}

// ListActions lists the connector's tools, resolving its secret first:
// listing happens outside a worker, where nothing else injects it.
func (s *source) ListActions(ctx context.Context, ec executors.ExecContext) ([]executors.Definition, error) {
	secret, err := s.secret(ctx)
	if err != nil {
		return nil, fmt.Errorf("connector %s secret: %w", s.row.Name, err)
	}
	ec.Token = secret
	return s.Source.ListActions(ctx, ec)
}

// Preview renders a tool call (mcp's Previewer) with the connector's
// secret resolved, as ListActions does.
func (s *source) Preview(ctx context.Context, actionID string, params json.RawMessage, ec executors.ExecContext) (*executors.Preview, error) {
	pv, ok := s.Source.(executors.Previewer)
	if !ok {
		return nil, executors.ErrNoPreview
	}
	if ec.Token == "" {
		secret, err := s.secret(ctx)
		if err != nil {
			return nil, fmt.Errorf("connector %s secret: %w", s.row.Name, err)
		}
		ec.Token = secret
	}
	return pv.Preview(ctx, actionID, params, ec)
}
