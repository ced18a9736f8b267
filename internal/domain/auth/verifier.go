package auth

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/outboxd/outboxd/internal/domain/auth/idp"
)

// DefaultLeeway is Config.Leeway's default.
const DefaultLeeway = 30 * time.Second

// Config configures a Verifier. At least one of Secret and IdP.Issuer
// must be set.
type Config struct {
	// Secret is the HS256 secret (auth.jwt_secret), at least 16
	// characters. Empty: HS256 tokens are refused.
	Secret string
	// PreviousSecret is the HS256 secret Secret replaced
	// (auth.jwt_secret_previous): tokens signed with it are still accepted
	// until PreviousSecretUntil, so that tokens minted before a rotation
	// keep working while the new secret reaches whoever mints them.
	// Default none.
	PreviousSecret string
	// PreviousSecretUntil ends the overlap (auth.jwt_secret_previous_until);
	// required with PreviousSecret.
	PreviousSecretUntil time.Time
	// Leeway is the clock skew allowed on exp and nbf (auth.leeway).
	// Default 30s.
	Leeway time.Duration
	// MaxLifetime refuses tokens valid for longer (auth.max_lifetime): exp
	// minus iat, or minus the time of the check when that is earlier or
	// iat is missing. Default 0: no maximum.
	MaxLifetime time.Duration
	// IdP accepts the tokens of an identity provider (auth.idp.*); off
	// while its Issuer is empty.
	IdP IdPConfig
	// Revocations refuses revoked tokens, remembered ones too (package
	// revocation). Default none: no token is revoked.
	Revocations Revocations
	// Logger logs failed fetches of the identity provider's keys.
	// Default: discarded.
	Logger *slog.Logger
	// Now is the clock. Default time.Now; only tests set it.
	Now func() time.Time
}

// IdPConfig configures the identity provider whose tokens are accepted.
type IdPConfig struct {
	// Issuer is the provider's issuer URL (auth.idp.issuer): every token's
	// iss must be it, and unless JWKSURL is set its keys are found by
	// OpenID Connect discovery under it.
	Issuer string
	// JWKSURL is the provider's JWK Set (auth.idp.jwks_url). Default: the
	// jwks_uri of Issuer's discovery document.
	JWKSURL string
	// Audience lists the accepted aud values (auth.idp.audience): a token
	// must name one of them. Required.
	Audience []string
	// RefreshInterval is how often the keys are fetched again
	// (auth.idp.refresh_interval). Default 1h.
	RefreshInterval time.Duration
	// UnknownKIDInterval is the least time between two fetches of the keys
	// caused by a token with an unknown kid
	// (auth.idp.unknown_kid_interval). Default 1m.
	UnknownKIDInterval time.Duration
	// Timeout bounds each request to the provider (auth.idp.timeout).
	// Default 10s.
	Timeout time.Duration
	// Claims names the claims outboxd's are read from
	// (auth.idp.claims.*). Default: outboxd's own names.
	Claims ClaimNames
	// Defaults are used for claims a token lacks (auth.idp.defaults.*),
	// such as kind user for every token of a provider that signs people
	// in. Default none.
	Defaults ClaimDefaults
	// Client makes the requests to the provider. Default: a client with
	// Timeout.
	Client *http.Client
}

// ClaimNames are the names of the claims outboxd reads from an identity
// provider's tokens. Each defaults to outboxd's own name (the JSON name of
// the field in Claims).
type ClaimNames struct {
	Subject      string // default "sub"
	Org          string // default "org"
	Kind         string // default "kind"
	Role         string // default "role"
	SessionID    string // default "session_id"
	AutomationID string // default "automation_id"
	UserID       string // default "user_id"
	Sources      string // default "sources"
}

// WithDefaults returns n with outboxd's names where n names none.
func (n ClaimNames) WithDefaults() ClaimNames {
	return ClaimNames{
		Subject:      cmp.Or(n.Subject, "sub"),
		Org:          cmp.Or(n.Org, "org"),
		Kind:         cmp.Or(n.Kind, "kind"),
		Role:         cmp.Or(n.Role, "role"),
		SessionID:    cmp.Or(n.SessionID, "session_id"),
		AutomationID: cmp.Or(n.AutomationID, "automation_id"),
		UserID:       cmp.Or(n.UserID, "user_id"),
		Sources:      cmp.Or(n.Sources, "sources"),
	}
}

// ClaimDefaults are values for claims an identity provider's token lacks.
type ClaimDefaults struct {
	Org  string
	Kind Kind
	Role Role
}

// WithDefaults returns c with its defaults filled in.
func (c Config) WithDefaults() Config {
	c.Leeway = cmp.Or(c.Leeway, DefaultLeeway)
	c.IdP.Claims = c.IdP.Claims.WithDefaults()
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

func (c *Config) validate() error {
	if c.IdP.Issuer == "" && c.IdP.JWKSURL != "" {
		return errors.New("auth.idp.issuer is required with auth.idp.jwks_url: every token's iss is checked against it")
	}
	if c.Secret == "" && c.IdP.Issuer == "" {
		return errors.New("auth.jwt_secret or auth.idp.issuer is required")
	}
	if c.Secret != "" && len(c.Secret) < 16 {
		return errors.New("auth.jwt_secret must be at least 16 characters")
	}
	if c.PreviousSecret != "" {
		if len(c.PreviousSecret) < 16 {
			return errors.New("auth.jwt_secret_previous must be at least 16 characters")
		}
		if c.Secret == "" {
			return errors.New("auth.jwt_secret_previous needs auth.jwt_secret, the secret that replaced it")
		}
		if c.PreviousSecretUntil.IsZero() {
			return errors.New("auth.jwt_secret_previous needs auth.jwt_secret_previous_until, when it stops being accepted")
		}
	}
	if c.Leeway < 0 || c.MaxLifetime < 0 {
		return errors.New("auth.leeway and auth.max_lifetime must not be negative")
	}
	if c.IdP.Issuer == "" {
		return nil
	}
	if len(c.IdP.Audience) == 0 {
		return errors.New("auth.idp.audience is required with auth.idp.issuer: the aud values outboxd's tokens carry")
	}
	switch c.IdP.Defaults.Kind {
	case "", KindUser, KindSandbox, KindService:
	default:
		return fmt.Errorf("auth.idp.defaults.kind %q is not user, sandbox or service", c.IdP.Defaults.Kind)
	}
	switch c.IdP.Defaults.Role {
	case "", RoleOwner, RoleAdmin, RoleMember:
	default:
		return fmt.Errorf("auth.idp.defaults.role %q is not owner, admin or member", c.IdP.Defaults.Role)
	}
	return nil
}

// Revocations says whether a verified token is revoked. Revoked is called
// on every Verify, so it answers from memory.
type Revocations interface {
	Revoked(c *Claims) bool
}

// ErrTokenRevoked refuses a token that was revoked.
var ErrTokenRevoked = errors.New("token revoked")

// idpAlgs are the algorithms of identity provider tokens.
var idpAlgs = []string{"RS256", "ES256", "EdDSA"}

// Verifier checks tokens. A token it verified is remembered until it
// expires, so an automation sending many requests with one token has it
// parsed and its signature checked once (that was 4 % of outboxd's CPU on
// the single-envelope path of outboxd bench).
type Verifier struct {
	cfg      Config
	secret   []byte
	previous []byte
	// keys are the identity provider's; nil without one.
	keys *idp.KeySet
	// parser checks signatures only; the validators check the claims of
	// HS256 tokens and of the identity provider's.
	parser       *jwt.Parser
	hsValidator  *jwt.Validator
	idpValidator *jwt.Validator

	mu sync.Mutex
	// known maps tokens verified to their claims; it is emptied when it
	// reaches maxKnown.
	known map[string]knownToken
}

// knownToken is a verified token's claims and until when they hold; for
// a token of the identity provider, the kid and key that verified it,
// which must still be published for the claims to hold.
type knownToken struct {
	claims *Claims
	until  time.Time
	kid    string
	key    any
}

// holds reports whether k's claims still hold at now.
func (v *Verifier) holds(k *knownToken, now time.Time) bool {
	return now.Before(k.until) && (k.key == nil || v.keys.Publishes(k.kid, k.key))
}

// maxKnown bounds the tokens a Verifier remembers.
const maxKnown = 4096

// NewVerifier returns a Verifier of HS256 tokens signed with secret.
func NewVerifier(secret string) (*Verifier, error) {
	return New(context.Background(), &Config{Secret: secret})
}

// New returns a Verifier. With an identity provider it discovers and
// fetches the provider's keys, within ctx; Close ends their refresh.
func New(ctx context.Context, cfg *Config) (*Verifier, error) {
	c := cfg.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	v := &Verifier{cfg: c, known: map[string]knownToken{}}
	var algs []string
	if c.Secret != "" {
		v.secret = []byte(c.Secret)
		algs = append(algs, jwt.SigningMethodHS256.Alg())
		if c.PreviousSecret != "" {
			v.previous = []byte(c.PreviousSecret)
		}
	}
	// WithIssuedAt refuses a token issued in the future (beyond the
	// leeway): revocations refuse tokens issued before a time that has
	// come, so such a token could not be revoked.
	common := []jwt.ParserOption{jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithLeeway(c.Leeway), jwt.WithTimeFunc(c.Now)}
	v.hsValidator = jwt.NewValidator(common...)
	if c.IdP.Issuer != "" {
		keys, err := idp.New(ctx, &idp.Config{
			Issuer: c.IdP.Issuer, JWKSURL: c.IdP.JWKSURL, RefreshInterval: c.IdP.RefreshInterval,
			UnknownKIDInterval: c.IdP.UnknownKIDInterval, Timeout: c.IdP.Timeout, Client: c.IdP.Client, Logger: c.Logger,
		})
		if err != nil {
			return nil, fmt.Errorf("auth.idp: %w", err)
		}
		v.keys = keys
		algs = append(algs, idpAlgs...)
		v.idpValidator = jwt.NewValidator(append(common, jwt.WithIssuer(c.IdP.Issuer), jwt.WithAudience(c.IdP.Audience...))...)
	}
	v.parser = jwt.NewParser(jwt.WithValidMethods(algs), jwt.WithoutClaimsValidation())
	return v, nil
}

// Leeway is the clock skew Verify allows on exp (auth.leeway, defaulted
// here alone): a token is let in until its exp plus Leeway, so a stream
// of it ends then (revocation.Ends). A nil Verifier lets no token in: 0.
func (v *Verifier) Leeway() time.Duration {
	if v == nil {
		return 0
	}
	return v.cfg.Leeway
}

// Close ends the refresh of the identity provider's keys.
func (v *Verifier) Close() {
	if v != nil && v.keys != nil {
		v.keys.Close()
	}
}

// Verify parses and validates a token string. The claims are the caller's
// own copy. Its errors say why a token is refused and nothing secret. A
// nil Verifier accepts no token (a process serving no route that takes
// one has none).
func (v *Verifier) Verify(token string) (*Claims, error) {
	if v == nil {
		return nil, errNoVerifier
	}
	now := v.cfg.Now()
	v.mu.Lock()
	known, ok := v.known[token]
	v.mu.Unlock()
	claims := known.claims
	if !ok || !v.holds(&known, now) {
		var err error
		if known, err = v.verify(token, now); err != nil {
			return nil, err
		}
		claims = known.claims
		// A token of the identity provider without a kid is verified
		// every time: which of the keys verified it is not known.
		if known.key == nil || known.kid != "" {
			v.mu.Lock()
			if len(v.known) >= maxKnown {
				clear(v.known)
			}
			v.known[token] = known
			v.mu.Unlock()
		}
	}
	// Checked on every call, a remembered token included: a revocation
	// applies from the moment this process loads it.
	if v.cfg.Revocations != nil && v.cfg.Revocations.Revoked(claims) {
		return nil, ErrTokenRevoked
	}
	c := *claims
	return &c, nil
}

// verify checks token at now and returns its claims, until when they
// hold and, for a token of the identity provider, the kid and key that
// verified it.
func (v *Verifier) verify(token string, now time.Time) (knownToken, error) {
	raw := jwt.MapClaims{}
	var known knownToken
	t, err := v.parser.ParseWithClaims(token, raw, func(t *jwt.Token) (any, error) {
		key, err := v.key(t)
		if t.Method != jwt.SigningMethodHS256 {
			known.kid, _ = t.Header["kid"].(string)
			known.key = key
		}
		return key, err
	})
	previous := false
	if errors.Is(err, jwt.ErrTokenSignatureInvalid) && t != nil && t.Method == jwt.SigningMethodHS256 &&
		v.previous != nil && now.Before(v.cfg.PreviousSecretUntil) {
		raw = jwt.MapClaims{}
		t, err = v.parser.ParseWithClaims(token, raw, func(*jwt.Token) (any, error) { return v.previous, nil })
		previous = true
	}
	if err != nil {
		return knownToken{}, err
	}
	validator, names, defaults := v.hsValidator, ClaimNames{}.WithDefaults(), ClaimDefaults{}
	if t.Method != jwt.SigningMethodHS256 {
		validator, names, defaults = v.idpValidator, v.cfg.IdP.Claims, v.cfg.IdP.Defaults
	}
	if err := validator.Validate(raw); err != nil {
		return knownToken{}, fmt.Errorf("%w: %w", jwt.ErrTokenInvalidClaims, err)
	}
	claims, err := mapClaims(raw, &names, &defaults)
	if err != nil {
		return knownToken{}, err
	}
	if err := claims.validate(); err != nil {
		return knownToken{}, err
	}
	if slices.Contains(claims.Audience, BrokerAudience) {
		return knownToken{}, fmt.Errorf("%w: the token was signed for the token broker, not for outboxd's API", jwt.ErrTokenInvalidClaims)
	}
	exp := claims.ExpiresAt.Time
	if limit := v.cfg.MaxLifetime; limit > 0 {
		start := now
		if claims.IssuedAt != nil && claims.IssuedAt.Before(now) {
			start = claims.IssuedAt.Time
		}
		if life := exp.Sub(start); life > limit {
			return knownToken{}, fmt.Errorf("%w: the token is valid for %s, longer than the %s outboxd accepts (auth.max_lifetime)",
				ErrTokenTooLong, life.Round(time.Second), limit)
		}
	}
	until := exp.Add(v.cfg.Leeway)
	if previous {
		until = minTime(until, v.cfg.PreviousSecretUntil)
	}
	claims.AcceptedUntil = until
	if kid, key := known.kid, known.key; key != nil && kid != "" {
		claims.keyPublished = func() bool { return v.keys.Publishes(kid, key) }
	} else if set, ok := key.(jwt.VerificationKeySet); ok {
		// Without a kid, the key of the set that verified the token
		// must stay published for it, as a named key must: its event
		// streams end once the provider withdrew it.
		alg := t.Method.Alg()
		if one := verifyingKey(token, t.Method, set); one != nil {
			claims.keyPublished = func() bool { return v.keys.PublishesForAlg(alg, one) }
		} else {
			claims.keyPublished = func() bool { return false }
		}
	}
	known.claims, known.until = claims, until
	return known, nil
}

// verifyingKey is the key of set whose signature token carries (token
// verified with set), nil when none is.
func verifyingKey(token string, method jwt.SigningMethod, set jwt.VerificationKeySet) any {
	i := strings.LastIndexByte(token, '.')
	if i < 0 {
		return nil
	}
	sig, err := jwt.NewParser().DecodeSegment(token[i+1:])
	if err != nil {
		return nil
	}
	for _, key := range set.Keys {
		if method.Verify(token[:i], sig, key) == nil {
			return key
		}
	}
	return nil
}

var errNoVerifier = errors.New("this process accepts no tokens")

// ErrTokenTooLong refuses a token valid for longer than Config.MaxLifetime.
var ErrTokenTooLong = errors.New("token lifetime exceeds the maximum")

// key is the parser's jwt.Keyfunc: the token's alg, which the parser has
// held to those configured, chooses the secret or the identity provider.
func (v *Verifier) key(t *jwt.Token) (any, error) {
	if t.Method == jwt.SigningMethodHS256 {
		return v.secret, nil
	}
	return v.keys.Keyfunc(t)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// roleRank orders the roles, for a role claim that lists several.
var roleRank = map[Role]int{RoleMember: 1, RoleAdmin: 2, RoleOwner: 3}

// roleClaim reads the role claim name: a string, or a list of strings
// (an identity provider's groups or roles) giving the highest of owner,
// admin and member it contains, other values ignored.
func roleClaim(raw jwt.MapClaims, name string) (Role, error) {
	switch v := raw[name].(type) {
	case nil:
		return "", nil
	case string:
		return Role(v), nil
	case []any:
		var best Role
		for _, item := range v {
			s, ok := item.(string)
			if !ok {
				return "", fmt.Errorf("claim %s must be a string or a list of strings", name)
			}
			if r := Role(s); roleRank[r] > roleRank[best] {
				best = r
			}
		}
		return best, nil
	default:
		return "", fmt.Errorf("claim %s must be a string or a list of strings", name)
	}
}

// emailClaim is the OpenID Connect claim of a person's address.
const emailClaim = "email"

// emailVerified reports whether raw's email_verified claim is true (a
// boolean, or the string "true" some providers issue).
func emailVerified(raw jwt.MapClaims) bool {
	switch v := raw["email_verified"].(type) {
	case bool:
		return v
	case string:
		return v == "true"
	}
	return false
}

// mapClaims reads outboxd's claims from raw by names, using defaults for
// the missing ones. A claim present with another type than its own is
// refused rather than ignored, as is a sources claim that is not a list.
func mapClaims(raw jwt.MapClaims, names *ClaimNames, defaults *ClaimDefaults) (*Claims, error) {
	c := &Claims{}
	var err error
	str := func(name string) string {
		v, ok := raw[name]
		if !ok || v == nil || err != nil {
			return ""
		}
		s, isString := v.(string)
		if !isString {
			err = fmt.Errorf("claim %s must be a string", name)
		}
		return s
	}
	c.Subject = str(names.Subject)
	if names.Subject == emailClaim && c.Subject != "" && err == nil && !emailVerified(raw) {
		return nil, fmt.Errorf("the subject is read from claim %s (auth.idp.claims.subject), but the token's email_verified is not true: "+
			"an address the identity provider has not verified names nobody", emailClaim)
	}
	c.Org = cmp.Or(str(names.Org), defaults.Org)
	c.Kind = cmp.Or(Kind(str(names.Kind)), defaults.Kind)
	if err != nil {
		// Before roleClaim's error replaces it: a mistyped claim is
		// refused, not filled in with a default.
		return nil, err
	}
	role, err := roleClaim(raw, names.Role)
	if err != nil {
		return nil, err
	}
	c.Role = cmp.Or(role, defaults.Role)
	c.SessionID = str(names.SessionID)
	c.AutomationID = str(names.AutomationID)
	c.UserID = str(names.UserID)
	c.Issuer = str("iss")
	c.ID = str("jti")
	if err != nil {
		return nil, err
	}
	if v, ok := raw[names.Sources]; ok {
		list, isList := v.([]any)
		if !isList {
			return nil, fmt.Errorf("claim %s must be a list of source ids", names.Sources)
		}
		ids := make([]string, 0, len(list))
		for _, item := range list {
			id, isString := item.(string)
			if !isString {
				return nil, fmt.Errorf("claim %s must be a list of source ids", names.Sources)
			}
			ids = append(ids, id)
		}
		c.Sources = OnlySources(ids...)
	}
	if c.Audience, err = raw.GetAudience(); err != nil {
		return nil, err
	}
	if c.ExpiresAt, err = raw.GetExpirationTime(); err != nil {
		return nil, err
	}
	if c.NotBefore, err = raw.GetNotBefore(); err != nil {
		return nil, err
	}
	if c.IssuedAt, err = raw.GetIssuedAt(); err != nil {
		return nil, err
	}
	return c, nil
}
