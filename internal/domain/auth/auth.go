package auth

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"
)

// Kind is who holds a token.
type Kind string

const (
	KindUser    Kind = "user"    // a human in the dashboard; has a Role
	KindSandbox Kind = "sandbox" // an agent's sandbox; bound to one session
	KindService Kind = "service" // an automation or backend enqueuing envelopes
)

// Role is a user's role in their organization.
type Role string

const (
	RoleOwner  Role = "owner"
	RoleAdmin  Role = "admin"
	RoleMember Role = "member"
)

// Claims are outboxd's JWT claims.
type Claims struct {
	Org          string `json:"org"`
	Kind         Kind   `json:"kind"`
	Role         Role   `json:"role,omitempty"`
	SessionID    string `json:"session_id,omitempty"`
	AutomationID string `json:"automation_id,omitempty"`
	// UserID is the human a sandbox or service token acts for; their own
	// credential for an integration is preferred over the org's.
	UserID string `json:"user_id,omitempty"`
	// Sources is the sources claim: absent, every source; present, only the
	// sources it lists (none when the list is empty).
	Sources SourceClaim `json:"sources,omitzero"`
	// AcceptedUntil is when the verifier stops accepting the token: its
	// exp plus the leeway, or the end of the previous secret's overlap
	// when that is earlier and the token is signed with it. Verify sets
	// it; it is no claim. Zero: not known (revocation.Ends then takes exp
	// plus the leeway).
	AcceptedUntil time.Time `json:"-"`
	// keyPublished reports, for a token of the identity provider, whether
	// the key that verified it is still published; nil for other tokens.
	keyPublished func() bool
	jwt.RegisteredClaims
}

// KeyPublished reports whether the key that verified the token is still
// one the identity provider publishes, by the keys outboxd fetched last:
// false once the provider withdrew it, when the token is refused too. A
// token the identity provider did not sign (HS256, a console session)
// always has its key.
func (c *Claims) KeyPublished() bool {
	return c.keyPublished == nil || c.keyPublished()
}

// CanAdminister reports whether the holder may approve, deny and change
// policy: a user with role admin or owner.
func (c *Claims) CanAdminister() bool {
	return c.Kind == KindUser && (c.Role == RoleAdmin || c.Role == RoleOwner)
}

// SourceClaim is a token's sources claim. Its zero value is the claim
// absent, which allows every source. A present claim is a restriction: it
// allows only the source ids it lists, so an empty list allows none. The
// fields are unexported so that a list can never be taken for an absent
// claim; build one with OnlySources.
type SourceClaim struct {
	ids     []string
	present bool
}

// OnlySources is a present sources claim allowing exactly ids; with no ids
// it allows no source.
func OnlySources(ids ...string) SourceClaim {
	return SourceClaim{ids: append([]string{}, ids...), present: true}
}

// Allows reports whether the claim allows the source id.
func (s SourceClaim) Allows(sourceID string) bool {
	return !s.present || slices.Contains(s.ids, sourceID)
}

// Present reports whether the token carries the claim.
func (s SourceClaim) Present() bool { return s.present }

// IDs returns the source ids a present claim lists.
func (s SourceClaim) IDs() []string { return slices.Clone(s.ids) }

// Filter is the claim as a query's filter of source ids: nil when it is
// absent (any source), else the ids it lists, an empty but non-nil list
// (no source) for "sources": [].
func (s SourceClaim) Filter() []string {
	if !s.present {
		return nil
	}
	return append([]string{}, s.ids...)
}

// IsZero reports whether the claim is absent, for omitzero.
func (s SourceClaim) IsZero() bool { return !s.present }

// MarshalJSON writes a present claim as its list, [] when empty.
func (s SourceClaim) MarshalJSON() ([]byte, error) {
	if !s.present {
		return []byte("null"), nil
	}
	return json.Marshal(append([]string{}, s.ids...))
}

// UnmarshalJSON reads a present claim. It must be a list of strings:
// null is refused rather than taken for an absent claim, so a token that
// meant to restrict never allows everything.
func (s *SourceClaim) UnmarshalJSON(b []byte) error {
	var ids []string
	if err := json.Unmarshal(b, &ids); err != nil || ids == nil {
		return errors.New("claim sources must be a list of source ids")
	}
	*s = SourceClaim{ids: ids, present: true}
	return nil
}

// MaySource reports whether the token's sources claim allows the given
// source id (see SourceClaim).
func (c *Claims) MaySource(sourceID string) bool {
	return c.Sources.Allows(sourceID)
}

// maxClaimBytes bounds every string claim: they are identifiers that end up
// in indexed columns.
const maxClaimBytes = 255

func (c *Claims) validate() error {
	claims := [][2]string{
		{"org", c.Org}, {"sub", c.Subject}, {"kind", string(c.Kind)}, {"role", string(c.Role)},
		{"session_id", c.SessionID}, {"automation_id", c.AutomationID}, {"user_id", c.UserID},
		// A token is revoked by its jti (a console session's sign-out
		// too), which token_revocations stores.
		{"jti", c.ID},
	}
	for i, s := range c.Sources.ids {
		claims = append(claims, [2]string{fmt.Sprintf("sources[%d]", i), s})
	}
	for _, claim := range claims {
		if err := checkClaim(claim[0], claim[1]); err != nil {
			return err
		}
	}
	if c.Org == "" {
		return errors.New("token has no org claim")
	}
	if c.Subject == "" {
		return errors.New("token has no sub claim")
	}
	switch c.Kind {
	case KindUser:
		switch c.Role {
		case RoleOwner, RoleAdmin, RoleMember:
		default:
			return fmt.Errorf("user token has invalid role %q", c.Role)
		}
	case KindSandbox:
		if c.SessionID == "" {
			return errors.New("sandbox token has no session_id claim")
		}
	case KindService:
	default:
		return fmt.Errorf("token has invalid kind %q", c.Kind)
	}
	return nil
}

// checkClaim refuses a claim value Postgres could not store or index, or
// that would forge log lines: invalid UTF-8, control characters (NUL
// included), more than maxClaimBytes.
func checkClaim(name, value string) error {
	if !utf8.ValidString(value) {
		return fmt.Errorf("claim %s is not valid UTF-8", name)
	}
	for _, r := range value {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("claim %s contains a control character", name)
		}
	}
	if len(value) > maxClaimBytes {
		return fmt.Errorf("claim %s is longer than %d bytes", name, maxClaimBytes)
	}
	return nil
}

// BrokerAudience is the aud of the tokens outboxd signs for its token
// broker (MintForBroker). The broker reads the organization from them;
// outboxd's API refuses them, so that the broker, which receives one for
// every organization, cannot act as any of them.
const BrokerAudience = "outboxd-token-broker"

// MintForBroker signs the service token outboxd's requests to the token
// broker carry for org: aud BrokerAudience, valid for ttl.
func MintForBroker(secret, org string, ttl time.Duration) (string, error) {
	return Mint(secret, Claims{Org: org, Kind: KindService, RegisteredClaims: jwt.RegisteredClaims{
		Subject: "outboxd", Audience: jwt.ClaimStrings{BrokerAudience},
	}}, ttl)
}

// Mint signs claims, setting iat and exp from ttl, and a random jti when
// claims has none: with it, one token can be revoked alone.
func Mint(secret string, claims Claims, ttl time.Duration) (string, error) {
	if err := claims.validate(); err != nil {
		return "", err
	}
	if claims.ID == "" {
		claims.ID = rand.Text()
	}
	now := time.Now()
	claims.IssuedAt = jwt.NewNumericDate(now)
	claims.ExpiresAt = jwt.NewNumericDate(now.Add(ttl))
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(secret))
}
