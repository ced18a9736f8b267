package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/outboxd/outboxd/executors/mcp"
	"github.com/outboxd/outboxd/executors/mcp/connectors"
	"github.com/outboxd/outboxd/internal/domain/audit"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/catalog"
	"github.com/outboxd/outboxd/policy"
)

// Connectors manages an organization's MCP connectors
// (executors/mcp/connectors).
type Connectors interface {
	List(ctx context.Context, org string) ([]connectors.View, error)
	Create(ctx context.Context, org, by string, in *connectors.Input) (connectors.View, error)
	Get(ctx context.Context, org, id string) (connectors.View, error)
	// Update revokes, with a new url or auth, the connector's grants in the
	// same transaction and returns their ids.
	Update(ctx context.Context, org, id, by string, in *connectors.Input) (connectors.View, []uuid.UUID, error)
	Delete(ctx context.Context, org, id string) error
	Validate(ctx context.Context, org, id string) (mcp.Diagnostics, error)
	Tools(ctx context.Context, org, id string) ([]connectors.ToolReview, error)
	// Review stores each tool's mode with its definition hash; a review
	// with a hash the tool no longer has is a *connectors.ChangedError.
	Review(ctx context.Context, org, id string, reviews map[string]catalog.Review) ([]connectors.ToolReview, error)
}

// connectorView is the API shape of a connector: never its secret.
type connectorView struct {
	ID                uuid.UUID             `json:"id"`
	SourceID          string                `json:"source_id"`
	Name              string                `json:"name"`
	URL               string                `json:"url"`
	Transport         string                `json:"transport"`
	Auth              connectorAuthView     `json:"auth"`
	Enabled           bool                  `json:"enabled"`
	RiskPolicy        mcp.RiskPolicy        `json:"risk_policy"`
	ToolRiskOverrides map[string]reviewView `json:"tool_risk_overrides"`
	CreatedBy         string                `json:"created_by"`
	CreatedAt         time.Time             `json:"created_at"`
	UpdatedAt         time.Time             `json:"updated_at"`
}

type connectorAuthView struct {
	Type       string `json:"type"`
	HeaderName string `json:"header_name,omitempty"`
}

// reviewView is an admin's review of a connector tool: the mode confirmed
// and the definition hash it was confirmed for.
type reviewView struct {
	Mode string `json:"mode"`
	Hash string `json:"hash"`
}

func viewConnector(v connectors.View) connectorView {
	reviews := viewEachValue(v.ToolRiskOverrides, func(r catalog.Review) reviewView { return reviewView(r) })
	return connectorView{
		ID: v.ID, SourceID: v.SourceID, Name: v.Name, URL: v.URL, Transport: v.Transport,
		Auth:    connectorAuthView{Type: v.AuthType, HeaderName: v.AuthHeader},
		Enabled: v.Enabled, RiskPolicy: v.RiskPolicy, ToolRiskOverrides: reviews,
		CreatedBy: v.CreatedBy, CreatedAt: v.CreatedAt, UpdatedAt: v.UpdatedAt,
	}
}

// diagnosticsView is what validating a connector learned; it converts
// from mcp.Diagnostics, so the two keep the same fields.
type diagnosticsView struct {
	Reachable       bool     `json:"reachable"`
	ProtocolVersion string   `json:"protocol_version,omitempty"`
	ServerName      string   `json:"server_name,omitempty"`
	ToolCount       int      `json:"tool_count"`
	Errors          []string `json:"errors"`
}

// toolReviewView is the API shape of a connector tool with its review
// state; it converts from connectors.ToolReview, so the two keep the same
// fields.
type toolReviewView struct {
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

func viewToolReviews(tools []connectors.ToolReview) []toolReviewView {
	return viewEach(tools, func(t connectors.ToolReview) toolReviewView { return toolReviewView(t) })
}

// decodeConnectorInput decodes a connector's create or patch body. Its
// types are named Input and Auth, local to keep them apart from the
// databases' Input: encoding/json names them in its errors ("Go struct
// field Input.name of type string").
func decodeConnectorInput(r *http.Request) (*connectors.Input, error) {
	type Auth struct {
		Type       mcp.AuthType `json:"type"`
		HeaderName string       `json:"header_name,omitempty"`
		Secret     *string      `json:"secret,omitempty"`
	}
	type Input struct {
		Name       *string         `json:"name"`
		URL        *string         `json:"url"`
		Transport  *string         `json:"transport"`
		Auth       *Auth           `json:"auth"`
		Enabled    *bool           `json:"enabled"`
		RiskPolicy *mcp.RiskPolicy `json:"risk_policy"`
	}
	var in Input
	if err := decode(r, &in, false); err != nil {
		return nil, err
	}
	return &connectors.Input{
		Name: in.Name, URL: in.URL, Transport: in.Transport, Auth: (*connectors.Auth)(in.Auth),
		Enabled: in.Enabled, RiskPolicy: in.RiskPolicy,
	}, nil
}

func (s *Server) listConnectors(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	list, err := s.connectors.List(r.Context(), c.Org)
	if err != nil {
		return err
	}
	list = inClaim(c, list, connectorSource)
	writeJSON(w, http.StatusOK, map[string]any{"connectors": viewEach(list, viewConnector)})
	return nil
}

func (s *Server) createConnector(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	if err := unnarrowed(c, "a new connector is a source outside the token's sources claim"); err != nil {
		return err
	}
	in, err := decodeConnectorInput(r)
	if err != nil {
		return err
	}
	conn, err := s.connectors.Create(r.Context(), c.Org, c.Subject, in)
	if err != nil {
		return err
	}
	s.record(r, &audit.Change{Action: "connector.create", TargetType: "connector", TargetID: conn.ID.String(), After: connectorChange(conn, in)})
	writeJSON(w, http.StatusCreated, map[string]any{"connector": viewConnector(conn)})
	return nil
}

func (s *Server) getConnector(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	conn, err := s.connectors.Get(r.Context(), c.Org, r.PathValue("id"))
	if err != nil {
		return err
	}
	if err := sourceAllowed(c, conn.SourceID); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"connector": viewConnector(conn)})
	return nil
}

func (s *Server) updateConnector(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	in, err := decodeConnectorInput(r)
	if err != nil {
		return err
	}
	before, err := s.connectorBefore(r, c)
	if err != nil {
		return err
	}
	conn, revoked, err := s.connectors.Update(r.Context(), c.Org, r.PathValue("id"), c.Subject, in)
	if err != nil {
		return err
	}
	s.record(r, &audit.Change{Action: "connector.update", TargetType: "connector", TargetID: conn.ID.String(), Before: before, After: connectorChange(conn, in)})
	s.recordRevokedGrants(r, revoked, conn.SourceID)
	writeJSON(w, http.StatusOK, map[string]any{"connector": viewConnector(conn)})
	return nil
}

func (s *Server) deleteConnector(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	before, err := s.connectorBefore(r, c)
	if err != nil {
		return err
	}
	if err := s.connectors.Delete(r.Context(), c.Org, r.PathValue("id")); err != nil {
		return err
	}
	s.record(r, &audit.Change{Action: "connector.delete", TargetType: "connector", TargetID: r.PathValue("id"), Before: before})
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// connectorInClaim is nil when c's sources claim allows the path's
// connector (or c carries none), else its 403 source_not_allowed; an
// unknown connector is not found.
func (s *Server) connectorInClaim(r *http.Request, c *auth.Claims) error {
	_, err := pathRecord(r, c, false, s.connectors.Get, connectorSource)
	return err
}

// connectorBefore is the connector of the path before a change, for the
// audit trail (nil when nothing is recorded), once c's sources claim is
// checked as connectorInClaim does, on the same read.
func (s *Server) connectorBefore(r *http.Request, c *auth.Claims) (*connectorView, error) {
	conn, err := pathRecord(r, c, s.audit != nil, s.connectors.Get, connectorSource)
	if err != nil || s.audit == nil {
		return nil, err
	}
	v := auditedConnector(*conn)
	return &v, nil
}

func connectorSource(v connectors.View) string { return v.SourceID }

// connectorChange is a connector after a change, for the audit trail: its
// view, and whether the change set its secret (never the secret).
func connectorChange(conn connectors.View, in *connectors.Input) any {
	return struct {
		connectorView
		SecretChanged bool `json:"secret_changed"`
		URLChanged    bool `json:"url_changed"`
	}{auditedConnector(conn), in.Auth != nil && in.Auth.Secret != nil, in.URL != nil}
}

// auditedConnector is a connector as the audit trail keeps it, its URL
// through auditURL.
func auditedConnector(conn connectors.View) connectorView {
	v := viewConnector(conn)
	v.URL = auditURL(v.URL)
	return v
}

// secretPathHosts take their whole secret in the path after its first
// segment (hooks.slack.com/services/T…/B…/<secret>,
// discord.com/api/webhooks/<id>/<token>), whatever it looks like.
var secretPathHosts = []string{"hooks.slack.com", "discord.com", "discordapp.com", "webhook.office.com"}

// auditURL is a URL as the audit trail keeps it, for good and exported:
// the values of its query, its userinfo, and its key-like path segments
// (mcp.KeyLike), where some servers take a key (…/mcp/s/<key>/mcp), and
// its fragment are secrets like an auth's, as is every path segment after
// the first on a host of secretPathHosts (or a subdomain of one). A URL
// that does not parse is kept as Redacted.
func auditURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return policy.Redacted
	}
	if u.User != nil {
		u.User = url.User(policy.Redacted)
	}
	secretPath := slices.ContainsFunc(secretPathHosts, func(h string) bool {
		host := strings.ToLower(u.Hostname())
		return host == h || strings.HasSuffix(host, "."+h)
	})
	segs := strings.Split(u.EscapedPath(), "/")
	for i, seg := range segs {
		decoded, _ := url.PathUnescape(seg)
		if (secretPath && i > 1 && seg != "") || mcp.KeyLike(seg) || mcp.KeyLike(decoded) {
			segs[i] = policy.Redacted
		}
	}
	u.RawPath = strings.Join(segs, "/")
	u.Path, _ = url.PathUnescape(u.RawPath)
	if u.RawQuery != "" {
		pairs := strings.Split(u.RawQuery, "&")
		for i, pair := range pairs {
			if name, _, found := strings.Cut(pair, "="); found {
				pairs[i] = name + "=" + policy.Redacted
			}
		}
		u.RawQuery = strings.Join(pairs, "&")
	}
	if u.Fragment != "" {
		u.Fragment, u.RawFragment = policy.Redacted, ""
	}
	return u.String()
}

func (s *Server) validateConnector(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	if err := s.connectorInClaim(r, c); err != nil {
		return err
	}
	diag, err := s.connectors.Validate(r.Context(), c.Org, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, diagnosticsView(diag))
	return nil
}

func (s *Server) connectorTools(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	if err := s.connectorInClaim(r, c); err != nil {
		return err
	}
	tools, err := s.connectors.Tools(r.Context(), c.Org, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"tools": viewToolReviews(tools)})
	return nil
}

func (s *Server) reviewConnectorTools(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	reviews, err := decodeToolReviews(r)
	if err != nil {
		return err
	}
	before, err := s.connectorBefore(r, c)
	if err != nil {
		return err
	}
	tools, err := s.connectors.Review(r.Context(), c.Org, r.PathValue("id"), reviews)
	var changed *connectors.ChangedError
	if errors.As(err, &changed) {
		return &apiError{status: http.StatusConflict, code: "tool_changed", message: err.Error(), details: map[string]any{"tools": changed.Tools}}
	}
	if err != nil {
		return err
	}
	if before != nil {
		after, err := s.connectors.Get(r.Context(), c.Org, r.PathValue("id"))
		if err != nil {
			return err
		}
		modes := make(map[string]string, len(reviews))
		for name, rv := range reviews {
			modes[name] = rv.Mode
		}
		s.record(r, &audit.Change{Action: "connector.review_tools", TargetType: "connector", TargetID: r.PathValue("id"),
			Before: map[string]any{"tool_risk_overrides": before.ToolRiskOverrides},
			After:  map[string]any{"tool_risk_overrides": viewConnector(after).ToolRiskOverrides, "reviewed": modes}})
	}
	writeJSON(w, http.StatusOK, map[string]any{"tools": viewToolReviews(tools)})
	return nil
}

// decodeToolReviews decodes a tool review: each tool's value is
// {"mode": "<mode>", "hash": "<hash>"}, the hash being the one the admin
// saw, or, as before hashes were sent, "<mode>" alone, which is for the
// tool's current definition whatever it is.
func decodeToolReviews(r *http.Request) (map[string]catalog.Review, error) {
	const shape = `body must be an object {"<tool>": {"mode": "<mode>", "hash": "<hash>"}} or {"<tool>": "<mode>"}`
	var raw map[string]json.RawMessage
	if err := decode(r, &raw, false); err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, badRequest("invalid_json", shape)
	}
	reviews := make(map[string]catalog.Review, len(raw))
	for _, name := range slices.Sorted(maps.Keys(raw)) {
		value := raw[name]
		var mode string
		if err := json.Unmarshal(value, &mode); err == nil {
			reviews[name] = catalog.Review{Mode: mode}
			continue
		}
		var rv struct {
			Mode *string `json:"mode"`
			Hash *string `json:"hash"`
		}
		dec := json.NewDecoder(bytes.NewReader(value))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rv); err != nil {
			reason := strings.TrimPrefix(err.Error(), "json: ")
			var typeErr *json.UnmarshalTypeError
			if errors.As(err, &typeErr) {
				reason = "not " + typeErr.Value
				if typeErr.Field != "" {
					reason = typeErr.Field + " must be a string, not " + typeErr.Value
				}
			}
			return nil, badRequest("invalid_json", fmt.Sprintf(`the review of %s must be "<mode>" or {"mode": "<mode>", "hash": "<hash>"}: %s`, name, reason))
		}
		switch {
		case rv.Mode == nil:
			return nil, badRequest("invalid_json", "the review of "+name+" has no mode")
		case rv.Hash == nil || *rv.Hash == "":
			return nil, badRequest("invalid_json", "the review of "+name+" has no hash: give the hash of the definition reviewed, as GET /v1/connectors/{id}/tools lists it")
		}
		reviews[name] = catalog.Review{Mode: *rv.Mode, Hash: *rv.Hash}
	}
	return reviews, nil
}
