package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/platform/netguard"
	"github.com/outboxd/outboxd/policy"
)

// AuthType says how a connector's secret is presented to its server.
type AuthType string

const (
	// AuthNone sends no credential. An empty AuthType means the same.
	AuthNone AuthType = "none"
	// AuthBearer sends "Authorization: Bearer <secret>".
	AuthBearer AuthType = "bearer"
	// AuthCustomHeader sends "<HeaderName>: <secret>".
	AuthCustomHeader AuthType = "custom_header"
)

// Auth is a connector's authentication scheme. The secret itself is never
// part of it: it lives in the encrypted store and is passed per call.
type Auth struct {
	Type AuthType
	// HeaderName is the header carrying the secret for AuthCustomHeader.
	HeaderName string
}

// RiskPolicy is an organization's say over the risk tiers of a connector's
// tools, which otherwise come from the server's annotations. Values are
// tiers (R0–R4) or risk words (read = R1, write = R2, danger = R3), as
// policy.ParseTier reads them.
type RiskPolicy struct {
	// Default applies to tools with neither an override nor a telling
	// annotation. Empty means write (R2).
	Default executors.Tier `json:"default,omitempty"`
	// Tools overrides the tier of individual tools by name.
	Tools map[string]executors.Tier `json:"tools,omitempty"`
}

// Connector is an organization's remote MCP server, as this package needs
// it: where it is, how to authenticate, and how to rate its tools.
type Connector struct {
	ID         uuid.UUID
	Name       string
	URL        string
	Auth       Auth
	RiskPolicy RiskPolicy
}

// clone returns a copy of c sharing nothing mutable with it.
func (c *Connector) clone() *Connector {
	out := *c
	out.RiskPolicy.Tools = maps.Clone(c.RiskPolicy.Tools)
	return &out
}

// authHeader returns the header name the secret goes in, "" for no auth.
func (c *Connector) authHeader() string {
	switch c.Auth.Type {
	case AuthBearer:
		return "Authorization"
	case AuthCustomHeader:
		return http.CanonicalHeaderKey(c.Auth.HeaderName)
	default:
		return ""
	}
}

// authValue returns the header value carrying secret.
func (c *Connector) authValue(secret string) string {
	if c.Auth.Type == AuthBearer {
		return "Bearer " + secret
	}
	return secret
}

// cacheKey fingerprints what a tool list depends on besides the server's
// own state: the URL and the auth scheme. Editing either makes cached lists
// miss. The secret is not part of it, so a rotated secret keeps the cache
// and a list can be served without resolving the secret.
func (c *Connector) cacheKey() string {
	h := sha256.New()
	authType := c.Auth.Type
	if authType == "" {
		authType = AuthNone
	}
	for _, part := range []string{c.URL, string(authType), http.CanonicalHeaderKey(c.Auth.HeaderName)} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// reservedHeaders are headers a custom auth header must not replace: they
// carry the transport's own protocol.
var reservedHeaders = map[string]bool{
	"Accept":               true,
	"Connection":           true,
	"Content-Length":       true,
	"Content-Type":         true,
	"Host":                 true,
	"Last-Event-Id":        true,
	"Mcp-Protocol-Version": true,
	"Mcp-Session-Id":       true,
	"Te":                   true,
	"Trailer":              true,
	"Transfer-Encoding":    true,
	"Upgrade":              true,
}

// CheckConnector checks a connector's configuration as the API does before
// saving it: the URL (see netguard.CheckURL), the auth type, the custom header name
// and the risk policy's values.
func CheckConnector(c *Connector, allowPrivate bool) error {
	if err := netguard.CheckURL(c.URL, allowPrivate); err != nil {
		return err
	}
	if err := checkAuth(c.Auth); err != nil {
		return err
	}
	if _, ok := policy.ParseTier(string(c.RiskPolicy.Default)); c.RiskPolicy.Default != "" && !ok {
		return fmt.Errorf("risk_policy default %q is not one of R0, R1, R2, R3, R4, read, write, danger", c.RiskPolicy.Default)
	}
	for name, tier := range c.RiskPolicy.Tools {
		if _, ok := policy.ParseTier(string(tier)); !ok {
			return fmt.Errorf("risk_policy for tool %q: %q is not one of R0, R1, R2, R3, R4, read, write, danger", name, tier)
		}
	}
	return nil
}

// checkAuth checks the auth type and the custom header name.
func checkAuth(auth Auth) error {
	switch auth.Type {
	case "", AuthNone, AuthBearer:
		if auth.HeaderName != "" {
			return fmt.Errorf("auth header_name is only used with %q auth", AuthCustomHeader)
		}
	case AuthCustomHeader:
		if !validHeaderName(auth.HeaderName) {
			return fmt.Errorf("auth header_name %q is not a valid HTTP header name", auth.HeaderName)
		}
		if reservedHeaders[http.CanonicalHeaderKey(auth.HeaderName)] {
			return fmt.Errorf("auth header_name %q is reserved by the MCP transport", auth.HeaderName)
		}
	default:
		return fmt.Errorf("auth type %q is not one of %q, %q, %q", auth.Type, AuthNone, AuthBearer, AuthCustomHeader)
	}
	return nil
}

// checkSecret refuses a secret that cannot be sent as a header value: the
// transport would reject it with an error naming the header, and a secret
// with a line break must never reach the wire.
func checkSecret(c *Connector, secret string) error {
	if c.authHeader() == "" {
		return nil
	}
	if secret == "" {
		return errors.New("the connector needs a secret and none was resolved")
	}
	return CheckSecret(secret)
}

// CheckSecret refuses a secret that cannot be sent as a header value: one
// with control characters (CR and LF included; tab is allowed). The error
// never contains the secret.
func CheckSecret(secret string) error {
	for i := 0; i < len(secret); i++ {
		if b := secret[i]; b < 0x20 && b != '\t' || b == 0x7f {
			return errors.New("the connector secret contains control characters")
		}
	}
	return nil
}

// validHeaderName reports whether name is an RFC 9110 field name (a token).
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		b := name[i]
		switch {
		case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b >= '0' && b <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", b) >= 0:
		default:
			return false
		}
	}
	return true
}

// Annotations are the behaviour hints an MCP server attaches to a tool.
// They are claims of the server, not guarantees; they only feed the risk
// tier.
type Annotations struct {
	Title           string
	ReadOnlyHint    bool
	DestructiveHint *bool
	IdempotentHint  bool
	OpenWorldHint   *bool
}

// Tool is one tool a connector's server offers.
type Tool struct {
	Name        string
	Title       string
	Description string
	// InputSchema is the JSON Schema of the tool's arguments, as the server
	// published it (re-encoded, so key order and spacing may differ).
	InputSchema json.RawMessage
	// OutputSchema is the JSON Schema of the tool's structured content,
	// when the server published one.
	OutputSchema json.RawMessage
	// Annotations are nil when the server sent none.
	Annotations *Annotations
	// Tier is derived from the connector's risk policy and the annotations.
	Tier executors.Tier
	// Hash is policy.DefinitionHash of InputSchema: it changes when what the
	// tool accepts changes, not when descriptions, defaults or enums do.
	Hash string
}

// clone returns a copy of t sharing nothing mutable with it.
func (t Tool) clone() Tool {
	t.InputSchema = append(json.RawMessage(nil), t.InputSchema...)
	if t.OutputSchema != nil {
		t.OutputSchema = append(json.RawMessage(nil), t.OutputSchema...)
	}
	if t.Annotations != nil {
		a := *t.Annotations
		if a.DestructiveHint != nil {
			a.DestructiveHint = new(*a.DestructiveHint)
		}
		if a.OpenWorldHint != nil {
			a.OpenWorldHint = new(*a.OpenWorldHint)
		}
		t.Annotations = &a
	}
	return t
}

// size is roughly how many bytes t holds: its texts and schemas.
func (t Tool) size() int {
	n := len(t.Name) + len(t.Title) + len(t.Description) + len(t.InputSchema) + len(t.OutputSchema) + len(t.Hash)
	if t.Annotations != nil {
		n += len(t.Annotations.Title)
	}
	return n
}

// definition turns t into the action definition a connector source offers.
func (t Tool) definition() executors.Definition {
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	return executors.Definition{
		ID:          t.Name,
		Description: desc,
		Tier:        t.Tier,
		Params:      append(json.RawMessage(nil), t.InputSchema...),
		Output:      append(json.RawMessage(nil), t.OutputSchema...),
		// The key goes to the server in _meta.idempotency_key; whether it
		// honours it, outboxd cannot tell.
		Delivery: executors.DeliveryAtLeastOnce,
	}
}

// deriveTier rates a tool: the connector's per-tool override wins, then the
// server's annotations (destructive first, so a tool claiming both is
// treated as the more dangerous: danger, R3; read-only: read, R1), then the
// connector's default, then write (R2).
func deriveTier(name string, ann *Annotations, rp RiskPolicy) executors.Tier {
	if t, ok := policy.ParseTier(string(rp.Tools[name])); ok {
		return t
	}
	if ann != nil {
		if ann.DestructiveHint != nil && *ann.DestructiveHint {
			return executors.TierR3
		}
		if ann.ReadOnlyHint {
			return executors.TierR1
		}
	}
	if t, ok := policy.ParseTier(string(rp.Default)); ok {
		return t
	}
	return executors.TierR2
}
