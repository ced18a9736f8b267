package signin

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/oauth2"

	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/auth/idp"
	"github.com/outboxd/outboxd/internal/platform/httpserver"
	"github.com/outboxd/outboxd/internal/platform/secretbox"
)

const (
	// CallbackPath is the path of the redirect URL outboxd is registered
	// with at the identity provider.
	CallbackPath = "/auth/callback"
	// ConsolePath is where a signed-in browser lands, and where the
	// provider sends it back after signing out.
	ConsolePath = "/console/"
	// SessionCookie is the name of the session cookie when outboxd is
	// reached over http (a development address such as 127.0.0.1, where a
	// cookie cannot be Secure).
	SessionCookie = "outboxd_session"
	// SecureSessionCookie is the session cookie's name when outboxd is
	// reached over https. A browser takes a __Host- cookie only when it is
	// Secure, for path / and without a Domain, so no other host (a sibling
	// subdomain) can set or overwrite it. Over https only this name is
	// read.
	SecureSessionCookie = hostPrefix + SessionCookie
	// hostPrefix is the cookie name prefix that binds a cookie to the host.
	hostPrefix = "__Host-"
	// CSRFHeader carries a session's CSRF token on mutating requests.
	CSRFHeader = "X-CSRF-Token"
	// flowCookie holds a sign-in in progress.
	flowCookie = "outboxd_signin"
	// flowTTL bounds a sign-in in progress.
	flowTTL = 10 * time.Minute
	// DefaultTimeout is Config.Timeout's default.
	DefaultTimeout = 10 * time.Second
)

// DefaultScopes is Config.Scopes' default.
var DefaultScopes = []string{oidc.ScopeOpenID, "profile", "email"}

// additional data binding sealed cookies to their use.
var (
	sessionAD = []byte("outboxd console session")
	flowAD    = []byte("outboxd console sign-in")
)

// Config configures console sign-in.
type Config struct {
	// Issuer is the identity provider's issuer URL (auth.idp.issuer).
	// Required.
	Issuer string
	// ClientID is outboxd's client id at the provider
	// (console.oidc.client_id). Required.
	ClientID string
	// ClientSecret is the client's secret (console.oidc.client_secret).
	// Default none: a public client, which PKCE protects.
	ClientSecret string
	// RedirectURL is the redirect URL registered at the provider
	// (console.oidc.redirect_url), ending in /auth/callback. Default:
	// derived from each request, <scheme>://<host>/auth/callback.
	RedirectURL string
	// Scopes are asked for (console.oidc.scopes); openid is added when
	// missing. Default openid, profile, email.
	Scopes []string
	// MaxLifetime caps a session's life (auth.max_lifetime). Default 0:
	// the ID token's.
	MaxLifetime time.Duration
	// TrustForwarded derives the redirect URL from X-Forwarded-Proto and
	// X-Forwarded-Host (http.trust_forwarded_for). Default false.
	TrustForwarded bool
	// Timeout bounds each request to the provider (auth.idp.timeout).
	// Default 10s.
	Timeout time.Duration
	// Client makes the requests to the provider. Default: a client with
	// Timeout.
	Client *http.Client
	// Logger logs refused sign-ins. Default: discarded.
	Logger *slog.Logger
	// Now is the clock. Default time.Now; only tests set it.
	Now func() time.Time
}

// WithDefaults returns c with its defaults filled in.
func (c Config) WithDefaults() Config {
	if len(c.Scopes) == 0 {
		c.Scopes = DefaultScopes
	}
	if !slices.Contains(c.Scopes, oidc.ScopeOpenID) {
		c.Scopes = append([]string{oidc.ScopeOpenID}, c.Scopes...)
	}
	c.Timeout = cmp.Or(c.Timeout, DefaultTimeout)
	if c.Client == nil {
		c.Client = &http.Client{Timeout: c.Timeout}
	}
	// Discovery, the keys and the code exchange follow no redirect to
	// another host or from https to http.
	c.Client = idp.Guarded(c.Client)
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

func (c *Config) validate() error {
	if c.ClientID == "" {
		return errors.New("console.oidc.client_id is required")
	}
	if c.Issuer == "" {
		return errors.New("console sign-in needs auth.idp.issuer: the identity provider people sign in with")
	}
	if c.RedirectURL != "" {
		u, err := url.Parse(c.RedirectURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || !strings.HasSuffix(u.Path, CallbackPath) ||
			u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("console.oidc.redirect_url %q must be an http(s) URL ending in %s", c.RedirectURL, CallbackPath)
		}
	}
	if c.MaxLifetime < 0 || c.Timeout < 0 {
		return errors.New("auth.max_lifetime and the timeout must not be negative")
	}
	return nil
}

// Identity maps verified ID token claims to outboxd's
// (auth.Verifier.Identity).
type Identity interface {
	Identity(raw map[string]any) (*auth.Claims, error)
}

// Deps are what SignIn works with.
type Deps struct {
	// Box seals the cookies (secrets.key).
	Box *secretbox.Box
	// Identity maps the ID token's claims.
	Identity Identity
}

// SignIn runs the console's sign-in with the identity provider.
type SignIn struct {
	cfg      Config
	box      *secretbox.Box
	identity Identity
	endpoint oauth2.Endpoint
	verifier *oidc.IDTokenVerifier
	// endSession is the provider's end_session_endpoint; empty when it
	// has none.
	endSession string
}

// New discovers the provider (<issuer>/.well-known/openid-configuration),
// within ctx.
func New(ctx context.Context, deps *Deps, cfg *Config) (*SignIn, error) {
	c := cfg.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	if deps.Box == nil || deps.Identity == nil {
		return nil, errors.New("console sign-in needs secrets.key and the identity provider's claim mapping")
	}
	ctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, c.Client), c.Timeout)
	defer cancel()
	provider, err := oidc.NewProvider(ctx, c.Issuer)
	if err != nil {
		return nil, fmt.Errorf("console sign-in: discovery of %s: %w", c.Issuer, err)
	}
	var meta struct {
		EndSession string `json:"end_session_endpoint"`
		JWKSURI    string `json:"jwks_uri"`
	}
	if err := provider.Claims(&meta); err != nil {
		return nil, fmt.Errorf("console sign-in: discovery of %s: %w", c.Issuer, err)
	}
	endpoint := provider.Endpoint()
	for _, e := range [][2]string{
		{"authorization_endpoint", endpoint.AuthURL}, {"token_endpoint", endpoint.TokenURL},
		{"jwks_uri", meta.JWKSURI}, {"end_session_endpoint", meta.EndSession},
	} {
		if e[1] == "" {
			continue
		}
		if err := idp.SecureFor(c.Issuer, e[0], e[1]); err != nil {
			return nil, fmt.Errorf("console sign-in: %w", err)
		}
	}
	if c.ClientSecret == "" {
		// A public client names itself in the request body.
		endpoint.AuthStyle = oauth2.AuthStyleInParams
	}
	return &SignIn{
		cfg: c, box: deps.Box, identity: deps.Identity, endpoint: endpoint, endSession: meta.EndSession,
		verifier: provider.VerifierContext(oidc.ClientContext(context.WithoutCancel(ctx), c.Client), &oidc.Config{ClientID: c.ClientID, Now: c.Now}),
	}, nil
}

// Kind classifies a refused sign-in.
type Kind int

const (
	// Invalid is a request that does not continue a sign-in this browser
	// started: no sign-in cookie, another state, no code.
	Invalid Kind = iota
	// Refused is the provider refusing the sign-in, or an identity
	// outboxd does not accept.
	Refused
	// Unavailable is the provider failing to answer.
	Unavailable
)

// Error is a refused sign-in: a code and a message for the person signing
// in, with nothing secret in either.
type Error struct {
	Kind    Kind
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message }

// ErrNoSession is Session's error for a request without a session cookie.
var ErrNoSession = errors.New("no console session")

// ErrInvalidSession is Session's error for a session cookie that is
// forged, altered, sealed with a key no longer configured, or expired.
var ErrInvalidSession = errors.New("invalid console session")

// ErrSessionExpired is Session's error for a session cookie whose session
// has expired (an ErrInvalidSession).
var ErrSessionExpired = fmt.Errorf("%w: the session has expired", ErrInvalidSession)

// Session is a signed-in person.
type Session struct {
	// Claims are the caller's, as the ID token's claims mapped; their exp
	// is the session's.
	Claims *auth.Claims
	// CSRF is the token mutating requests must carry in CSRFHeader.
	CSRF string
}

// CheckCSRF reports whether token is the session's CSRF token.
func (s *Session) CheckCSRF(token string) bool {
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.CSRF)) == 1
}

// flow is a sign-in in progress, kept in flowCookie.
type flow struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Redirect string `json:"r"`
	Expires  int64  `json:"e"`
}

// session is a session cookie's content.
type session struct {
	Claims *auth.Claims `json:"c"`
	CSRF   string       `json:"x"`
}

// Start begins a sign-in: the provider's authorization URL to send the
// browser to, and the cookie that keeps the state, the nonce and the PKCE
// verifier until the browser comes back.
func (s *SignIn) Start(r *http.Request) (string, *http.Cookie, error) {
	redirect := s.redirectURL(r)
	f := flow{
		State: random(), Nonce: random(), Verifier: oauth2.GenerateVerifier(), Redirect: redirect,
		Expires: s.cfg.Now().Add(flowTTL).Unix(),
	}
	value, err := s.seal(f, flowAD)
	if err != nil {
		return "", nil, err
	}
	location := s.oauth(redirect).AuthCodeURL(f.State, oauth2.S256ChallengeOption(f.Verifier), oidc.Nonce(f.Nonce))
	return location, s.cookie(flowCookie, value, redirect, int(flowTTL.Seconds())), nil
}

// Finish completes a sign-in the browser comes back with: the cookies to
// set (the session, and the sign-in's cleared) and where to send the
// browser, the console. Its errors are *Error.
func (s *SignIn) Finish(r *http.Request) (string, []*http.Cookie, error) {
	now := s.cfg.Now()
	var f flow
	ck, err := r.Cookie(cookieName(flowCookie, s.redirectURL(r)))
	if err != nil {
		return "", nil, &Error{Invalid, "sign_in_not_started", "no sign-in is in progress in this browser (its cookie is missing or expired): sign in again from the console"}
	}
	if err := s.open(ck.Value, flowAD, &f); err != nil {
		return "", nil, &Error{Invalid, "sign_in_not_started", "the sign-in cookie of this browser is not valid: sign in again from the console"}
	}
	if now.Unix() > f.Expires {
		return "", nil, &Error{Invalid, "sign_in_expired", "the sign-in took longer than " + flowTTL.String() + ": sign in again from the console"}
	}
	q := r.URL.Query()
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(f.State)) != 1 {
		return "", nil, &Error{Invalid, "state_mismatch", "this answer of the identity provider belongs to another sign-in (its state differs): sign in again from the console"}
	}
	if e := q.Get("error"); e != "" {
		msg := "the identity provider refused the sign-in: " + printable(e)
		if d := q.Get("error_description"); d != "" {
			msg += " (" + printable(d) + ")"
		}
		return "", nil, &Error{Refused, "provider_refused", msg}
	}
	code := q.Get("code")
	if code == "" {
		return "", nil, &Error{Invalid, "missing_code", "the identity provider's answer has no authorization code"}
	}
	ctx, cancel := context.WithTimeout(oidc.ClientContext(r.Context(), s.cfg.Client), s.cfg.Timeout)
	defer cancel()
	token, err := s.oauth(f.Redirect).Exchange(ctx, code, oauth2.VerifierOption(f.Verifier))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode != "" {
			// The provider's error code only: its whole answer is no
			// business of the browser's.
			return "", nil, &Error{Refused, "code_exchange_refused", "the identity provider refused the code exchange: " + printable(re.ErrorCode)}
		}
		s.cfg.Logger.WarnContext(r.Context(), "console sign-in: code exchange failed", "issuer", s.cfg.Issuer, "error", exchangeError(err))
		return "", nil, &Error{Unavailable, "provider_unavailable", "the identity provider did not answer the code exchange"}
	}
	raw, _ := token.Extra("id_token").(string)
	if raw == "" {
		return "", nil, &Error{Refused, "no_id_token", "the identity provider answered without an ID token: is the openid scope allowed for this client?"}
	}
	idToken, err := s.verifier.Verify(ctx, raw)
	if err != nil {
		return "", nil, &Error{Refused, "invalid_id_token", "the identity provider's ID token was refused: " + err.Error()}
	}
	if subtle.ConstantTimeCompare([]byte(idToken.Nonce), []byte(f.Nonce)) != 1 {
		return "", nil, &Error{Refused, "nonce_mismatch", "the ID token belongs to another sign-in (its nonce differs)"}
	}
	var rawClaims map[string]any
	if err := idToken.Claims(&rawClaims); err != nil {
		return "", nil, &Error{Refused, "invalid_id_token", "the identity provider's ID token was refused: " + err.Error()}
	}
	claims, err := s.identity.Identity(rawClaims)
	if err != nil {
		return "", nil, &Error{Refused, "not_a_console_user", "your identity provider's claims do not make an outboxd user: " + err.Error() +
			" (see auth.idp.claims and auth.idp.defaults)"}
	}
	if claims.Kind != auth.KindUser {
		return "", nil, &Error{Refused, "not_a_console_user", fmt.Sprintf("the identity provider's claims make a %s, not a user: the console signs in users (owner, admin or member)", claims.Kind)}
	}
	expires := idToken.Expiry
	if limit := s.cfg.MaxLifetime; limit > 0 && now.Add(limit).Before(expires) {
		expires = now.Add(limit)
	}
	claims.ExpiresAt = jwt.NewNumericDate(expires)
	if claims.IssuedAt == nil || claims.IssuedAt.After(now) {
		// Revocations refuse the sessions issued before their cut-off:
		// one issued "in the future" by a provider whose clock runs ahead
		// would outlive every revocation, one without iat be refused by
		// every revocation, later ones included. It is issued now.
		claims.IssuedAt = jwt.NewNumericDate(now)
	}
	if claims.ID == "" {
		// Signing out revokes the session by its id (the ID token's jti
		// when it has one): every session needs one.
		claims.ID = "console-" + random()
	}
	value, err := s.seal(session{Claims: claims, CSRF: random()}, sessionAD)
	if err != nil {
		return "", nil, err
	}
	maxAge := int(expires.Sub(now).Seconds())
	if maxAge <= 0 {
		return "", nil, &Error{Refused, "invalid_id_token", "the identity provider's ID token has expired"}
	}
	return landing(f.Redirect), []*http.Cookie{
		s.cookie(SessionCookie, value, f.Redirect, maxAge),
		s.cookie(flowCookie, "", f.Redirect, -1),
	}, nil
}

// Session returns the request's session: ErrNoSession without a session
// cookie, ErrSessionExpired for one that has expired, ErrInvalidSession
// (wrapped, with the reason) for one that is not valid.
func (s *SignIn) Session(r *http.Request) (*Session, error) {
	ck, err := r.Cookie(cookieName(SessionCookie, s.redirectURL(r)))
	if err != nil || ck.Value == "" {
		return nil, ErrNoSession
	}
	var sess session
	if err := s.open(ck.Value, sessionAD, &sess); err != nil || sess.Claims == nil || sess.Claims.ExpiresAt == nil {
		return nil, fmt.Errorf("%w: the cookie is not one outboxd sealed", ErrInvalidSession)
	}
	if !s.cfg.Now().Before(sess.Claims.ExpiresAt.Time) {
		return nil, ErrSessionExpired
	}
	// Refused from its expiry on, without the verifier's leeway: a stream
	// it opens ends then too (revocation.Ends).
	sess.Claims.AcceptedUntil = sess.Claims.ExpiresAt.Time
	return &Session{Claims: sess.Claims, CSRF: sess.CSRF}, nil
}

// SignOut returns the cookie that clears the session, and the provider's
// end-session URL to send the browser to (empty when the provider has no
// end_session_endpoint). The URL carries the client id and the console as
// the post-logout redirect URL, and no token.
func (s *SignIn) SignOut(r *http.Request) (*http.Cookie, string) {
	redirect := s.redirectURL(r)
	clear := s.cookie(SessionCookie, "", redirect, -1)
	if s.endSession == "" {
		return clear, ""
	}
	u, err := url.Parse(s.endSession)
	if err != nil {
		return clear, ""
	}
	q := u.Query()
	q.Set("client_id", s.cfg.ClientID)
	q.Set("post_logout_redirect_uri", landing(redirect))
	u.RawQuery = q.Encode()
	return clear, u.String()
}

func (s *SignIn) oauth(redirect string) *oauth2.Config {
	return &oauth2.Config{
		ClientID: s.cfg.ClientID, ClientSecret: s.cfg.ClientSecret, Endpoint: s.endpoint, RedirectURL: redirect, Scopes: s.cfg.Scopes,
	}
}

// redirectURL is the configured redirect URL, or the request's own
// origin's /auth/callback.
func (s *SignIn) redirectURL(r *http.Request) string {
	if s.cfg.RedirectURL != "" {
		return s.cfg.RedirectURL
	}
	return httpserver.Origin(r, s.cfg.TrustForwarded) + CallbackPath
}

// cookie is an HttpOnly, SameSite=Lax cookie for the whole origin; when
// outboxd is reached over https, Secure and named with the __Host- prefix.
func (s *SignIn) cookie(name, value, redirect string, maxAge int) *http.Cookie {
	c := &http.Cookie{
		Name: cookieName(name, redirect), Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, Secure: secure(redirect), SameSite: http.SameSiteLaxMode,
	}
	if maxAge > 0 {
		c.Expires = s.cfg.Now().Add(time.Duration(maxAge) * time.Second)
	}
	return c
}

func (s *SignIn) seal(v any, additional []byte) (string, error) {
	plain, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(s.box.Seal(plain, additional)), nil
}

func (s *SignIn) open(value string, additional []byte, v any) error {
	sealed, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil {
		return err
	}
	plain, err := s.box.Open(sealed, additional)
	if err != nil {
		return err
	}
	return json.Unmarshal(plain, v)
}

// secure reports whether outboxd is reached over https, as its redirect
// URL says.
func secure(redirect string) bool { return strings.HasPrefix(redirect, "https://") }

// cookieName is the name of the cookie name when outboxd is reached at
// redirect: with the __Host- prefix over https.
func cookieName(name, redirect string) string {
	if secure(redirect) {
		return hostPrefix + name
	}
	return name
}

// landing is the console beside the callback path of redirect.
func landing(redirect string) string {
	return strings.TrimSuffix(redirect, CallbackPath) + ConsolePath
}

// random is 128 random bits as text.
func random() string { return rand.Text() }

// printable shortens a value the provider put in a URL and keeps only its
// printable characters, for a message.
func printable(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return -1
	}, s)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// exchangeError describes a failed code exchange without the request, whose
// body holds the code and the verifier.
func exchangeError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Op + " " + redactURL(ue.URL) + ": " + ue.Err.Error()
	}
	return err.Error()
}

func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "the token endpoint"
	}
	u.RawQuery, u.User = "", nil
	return u.String()
}
