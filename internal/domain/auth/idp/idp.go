// Package idp fetches and caches the signing keys of an identity provider:
// its JWK Set, found through OpenID Connect discovery
// (<issuer>/.well-known/openid-configuration → jwks_uri) or given directly.
//
// The JOSE work is github.com/MicahParks/jwkset (parsing and storing the
// JWK Set, refreshing it in the background, refreshing it on an unknown
// kid behind a rate limiter) through github.com/MicahParks/keyfunc/v3,
// which hands its keys to github.com/golang-jwt/jwt/v5, the library
// outboxd already verifies its HS256 tokens with. One parser then checks
// every token, whoever signed it, with the same claim validation (exp,
// nbf, iss, aud, leeway). github.com/coreos/go-oidc/v3 was the
// alternative: it verifies with go-jose instead, fixes its own clock skew
// allowance, and refetches keys on every unknown kid without a bound,
// which is what a flood of forged kids must not cause. Discovery is one
// GET of a JSON document, done here.
package idp

import (
	"cmp"
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"
)

// Defaults of Config.
const (
	// DefaultRefreshInterval is RefreshInterval's default.
	DefaultRefreshInterval = time.Hour
	// DefaultUnknownKIDInterval is UnknownKIDInterval's default.
	DefaultUnknownKIDInterval = time.Minute
	// DefaultTimeout is Timeout's default.
	DefaultTimeout = 10 * time.Second
)

// ErrUnknownKey is returned for a token whose kid names no key of the set,
// even after a refresh (or when a refresh was not allowed yet, or failed),
// or whose header does not fit the key (the key's alg is another).
var ErrUnknownKey = errors.New("no signing key of the identity provider fits the token's kid and alg")

// Config configures a KeySet.
type Config struct {
	// Issuer is the identity provider's issuer URL. When JWKSURL is empty
	// the JWK Set's address is discovered from
	// <Issuer>/.well-known/openid-configuration, whose issuer must be
	// Issuer.
	Issuer string
	// JWKSURL is the JWK Set's address; when set, no discovery is made.
	JWKSURL string
	// RefreshInterval is how often the JWK Set is fetched again, so that
	// keys the provider removed stop being accepted. Default 1h.
	RefreshInterval time.Duration
	// UnknownKIDInterval is the least time between two fetches caused by
	// tokens whose kid is unknown: a rotated key is picked up at once, a
	// flood of forged kids causes one fetch per interval. Default 1m.
	UnknownKIDInterval time.Duration
	// Timeout bounds each HTTP request to the provider. Default 10s.
	Timeout time.Duration
	// Client makes the HTTP requests. Default: a client with Timeout.
	Client *http.Client
	// Logger logs failed refreshes. Default: discarded.
	Logger *slog.Logger
}

// WithDefaults returns c with its defaults filled in.
func (c Config) WithDefaults() Config {
	c.RefreshInterval = cmp.Or(c.RefreshInterval, DefaultRefreshInterval)
	c.UnknownKIDInterval = cmp.Or(c.UnknownKIDInterval, DefaultUnknownKIDInterval)
	c.Timeout = cmp.Or(c.Timeout, DefaultTimeout)
	if c.Client == nil {
		c.Client = &http.Client{Timeout: c.Timeout}
	}
	c.Client = Guarded(c.Client)
	c.Logger = cmp.Or(c.Logger, slog.New(slog.DiscardHandler))
	return c
}

func (c *Config) validate() error {
	if c.Issuer == "" && c.JWKSURL == "" {
		return errors.New("an identity provider needs an issuer or a JWKS URL")
	}
	for _, u := range []string{c.Issuer, c.JWKSURL} {
		if u == "" {
			continue
		}
		if p, err := url.Parse(u); err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
			return fmt.Errorf("%q is not an http(s) URL", u)
		}
	}
	if c.RefreshInterval < 0 || c.UnknownKIDInterval < 0 || c.Timeout < 0 {
		return errors.New("the identity provider's intervals and timeout must not be negative")
	}
	return nil
}

// KeySet is an identity provider's signing keys, cached and refreshed.
type KeySet struct {
	url    string
	keys   keyfunc.Keyfunc
	cancel context.CancelFunc
}

// New discovers the JWK Set's address when needed and fetches the set.
// Discovery failing is an error; the first fetch of the set failing is
// only logged, and the set is fetched again for the first token. ctx
// bounds the start-up requests; Close ends the background refresh.
func New(ctx context.Context, cfg *Config) (*KeySet, error) {
	c := cfg.WithDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	jwksURL := c.JWKSURL
	if jwksURL == "" {
		var err error
		if jwksURL, err = Discover(ctx, c.Client, c.Issuer); err != nil {
			return nil, err
		}
	}
	// The background refresh lives until Close, not as long as ctx.
	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	noErrorOnFirstFetch := true
	fetched, err := keyfunc.NewDefaultOverrideCtx(life, []string{jwksURL}, keyfunc.Override{
		Client:                    limited(c.Client),
		HTTPTimeout:               c.Timeout,
		NoErrorReturnFirstHTTPReq: &noErrorOnFirstFetch,
		RefreshInterval:           c.RefreshInterval,
		// One fetch per interval for unknown kids. A token that finds the
		// limiter empty waits no longer than the limit allows a fetch to
		// take (rate.Limiter.Wait fails at once when the wait would pass
		// the deadline), so a flood holds at most one waiting request.
		RefreshUnknownKID: rate.NewLimiter(rate.Every(c.UnknownKIDInterval), 1),
		RateLimitWaitMax:  c.Timeout,
		RefreshErrorHandlerFunc: func(u string) func(context.Context, error) {
			return func(ctx context.Context, err error) {
				c.Logger.WarnContext(ctx, "fetching the identity provider's signing keys failed", "jwks_url", u, "error", err)
			}
		},
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("identity provider keys: %w", err)
	}
	// Keys published for encryption (use "enc") never verify a signature.
	keys, err := keyfunc.New(keyfunc.Options{Ctx: life, Storage: fetched.Storage(), UseWhitelist: []jwkset.USE{jwkset.UseSig, ""}})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("identity provider keys: %w", err)
	}
	return &KeySet{url: jwksURL, keys: keys, cancel: cancel}, nil
}

// ErrRedirectRefused is the error of a request to the identity provider
// that answered a redirect Guarded does not follow.
var ErrRedirectRefused = errors.New("redirect refused")

// Guarded returns a copy of client that follows a redirect of a request to
// the identity provider only to the same scheme and host, or from http to
// https on the same host name: never from https to http, where anyone on
// the path could answer with keys or a discovery document of their own,
// nor to another host, which is not the provider's answer. The discovery
// document and the JWK Set are what every token's signature is trusted
// by; a provider that moved them is configured with their new address.
func Guarded(client *http.Client) *http.Client {
	c := *client
	c.CheckRedirect = checkRedirect
	return &c
}

// maxRedirects bounds a chain of redirects Guarded follows.
const maxRedirects = 5

func checkRedirect(req *http.Request, via []*http.Request) error {
	first := via[0].URL
	to := req.URL
	switch {
	case len(via) > maxRedirects:
		return fmt.Errorf("%w: %s redirected more than %d times", ErrRedirectRefused, redact(first), maxRedirects)
	case first.Scheme == "https" && to.Scheme != "https":
		return fmt.Errorf("%w: %s redirected to %s, from https to http: outboxd reaches an https identity provider over https only",
			ErrRedirectRefused, redact(first), redact(to))
	case to.Hostname() != first.Hostname() || (to.Scheme == first.Scheme && to.Host != first.Host):
		return fmt.Errorf("%w: %s redirected to %s, another host: configure the address the provider answers at",
			ErrRedirectRefused, redact(first), redact(to))
	}
	return nil
}

// redact is u without its query and user information, for an error.
func redact(u *url.URL) string {
	c := *u
	c.RawQuery, c.User, c.Fragment = "", nil, ""
	return c.String()
}

// SecureFor refuses an address the identity provider's discovery document
// names (what) when the issuer is https and the address is not: the
// document's https answer would otherwise send outboxd, or a browser, to
// a plain http address anyone on the path can answer.
func SecureFor(issuer, what, address string) error {
	i, err := url.Parse(issuer)
	if err != nil || i.Scheme != "https" {
		return nil
	}
	if u, err := url.Parse(address); err != nil || u.Scheme != "https" {
		return fmt.Errorf("the discovery document of the https issuer %s names %s %q, which is not https: "+
			"outboxd talks to an https identity provider over https only", issuer, what, address)
	}
	return nil
}

// URL is the JWK Set's address.
func (k *KeySet) URL() string { return k.url }

// Keyfunc is a jwt.Keyfunc returning the public key the token's kid names
// (the signing keys of the set for its alg, for a token without a kid).
// Its one error is ErrUnknownKey, which says nothing of the set or of the provider: the
// library's own (a refresh refused by the rate limit, a failed fetch) are
// the operator's business, logged when a fetch fails.
func (k *KeySet) Keyfunc(t *jwt.Token) (any, error) {
	if _, ok := t.Header[jwkset.HeaderKID]; !ok {
		return k.signingKeys(t.Method.Alg())
	}
	key, err := k.keys.Keyfunc(t)
	if err != nil {
		return nil, ErrUnknownKey
	}
	return key, nil
}

// Publishes reports whether the set in memory still holds key, for
// signatures, under kid: whether a token it verified earlier would verify
// now. It fetches nothing. A remembered token (auth.Verifier) is checked
// with it, so that a key the provider removed stops its tokens at the
// fetch that learns of the removal.
func (k *KeySet) Publishes(kid string, key any) bool {
	// KeyReadAll reads the set in memory; KeyRead would fetch it again
	// for a kid it lacks.
	jwks, err := k.keys.Storage().KeyReadAll(context.Background())
	if err != nil {
		return false
	}
	for _, j := range jwks {
		meta := j.Marshal()
		if meta.KID != kid || (meta.USE != jwkset.UseSig && meta.USE != "") {
			continue
		}
		published := j.Key()
		if pk, ok := published.(interface{ Public() crypto.PublicKey }); ok {
			published = pk.Public()
		}
		if eq, ok := published.(interface{ Equal(crypto.PublicKey) bool }); ok && eq.Equal(key) {
			return true
		}
	}
	return false
}

// PublishesForAlg reports whether the set in memory still holds key
// among the keys that may verify a token of alg without a kid
// (signingKeys): whether a token without a kid it verified earlier would
// verify now. It fetches nothing.
func (k *KeySet) PublishesForAlg(alg string, key any) bool {
	set, err := k.signingKeys(alg)
	if err != nil {
		return false
	}
	for _, published := range set.(jwt.VerificationKeySet).Keys {
		if eq, ok := published.(interface{ Equal(crypto.PublicKey) bool }); ok && eq.Equal(key) {
			return true
		}
	}
	return false
}

// signingKeys are the keys of the set that may verify a token of alg
// without a kid: those published for signatures (or for no stated use)
// and for alg (or for no stated alg). keyfunc's own answer for such a
// token is every key of the set, encryption keys included, which a
// provider may use as a decryption oracle.
func (k *KeySet) signingKeys(alg string) (any, error) {
	// The set in memory: reading it fetches nothing.
	jwks, err := k.keys.Storage().KeyReadAll(context.Background())
	if err != nil {
		return nil, ErrUnknownKey
	}
	var set jwt.VerificationKeySet
	for _, j := range jwks {
		meta := j.Marshal()
		if (meta.USE != jwkset.UseSig && meta.USE != "") || (meta.ALG != "" && meta.ALG.String() != alg) {
			continue
		}
		key := j.Key()
		if pk, ok := key.(interface{ Public() crypto.PublicKey }); ok {
			key = pk.Public()
		}
		set.Keys = append(set.Keys, key)
	}
	if len(set.Keys) == 0 {
		return nil, ErrUnknownKey
	}
	return set, nil
}

// Close ends the background refresh.
func (k *KeySet) Close() { k.cancel() }

// maxDiscoveryBytes bounds the discovery document read.
const maxDiscoveryBytes = 1 << 20

// maxKeySetBytes bounds the JWK Set read: jwkset decodes the whole answer,
// however long, into memory. A set of a few dozen keys with their
// certificate chains takes a few tens of KiB.
const maxKeySetBytes = 1 << 20

// errKeySetTooLarge ends the read of a JWK Set longer than maxKeySetBytes.
var errKeySetTooLarge = fmt.Errorf("the JWK Set is larger than %d bytes", maxKeySetBytes)

// limited returns a copy of client whose answers are cut off, with
// errKeySetTooLarge, after maxKeySetBytes.
func limited(client *http.Client) *http.Client {
	c := *client
	base := client.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	c.Transport = limitedTransport{base: base}
	return &c
}

type limitedTransport struct{ base http.RoundTripper }

func (t limitedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err == nil {
		resp.Body = &limitedBody{ReadCloser: resp.Body, left: maxKeySetBytes}
	}
	return resp, err
}

// limitedBody reads at most left bytes of its body, then fails.
type limitedBody struct {
	io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errKeySetTooLarge
	}
	// One byte past the limit tells a body of exactly left bytes from a
	// longer one.
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	if b.left -= int64(n); b.left < 0 {
		return n + int(b.left), errKeySetTooLarge
	}
	return n, err
}

// Discover reads issuer's OpenID Connect discovery document and returns
// its jwks_uri. The document's issuer must be issuer (OpenID Connect
// Discovery 1.0, section 4.3).
func Discover(ctx context.Context, client *http.Client, issuer string) (string, error) {
	u := strings.TrimSuffix(issuer, "/") + "/.well-known/openid-configuration"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", fmt.Errorf("discovery of %s: %w", issuer, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := Guarded(client).Do(req)
	if err != nil {
		return "", fmt.Errorf("discovery of %s: %w", issuer, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("discovery of %s: GET %s answered %s", issuer, u, resp.Status)
	}
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxDiscoveryBytes)).Decode(&doc); err != nil {
		return "", fmt.Errorf("discovery of %s: reading %s: %w", issuer, u, err)
	}
	if doc.Issuer != issuer {
		return "", fmt.Errorf("discovery of %s: the document names issuer %q", issuer, doc.Issuer)
	}
	if p, err := url.Parse(doc.JWKSURI); err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
		return "", fmt.Errorf("discovery of %s: jwks_uri %q is not an http(s) URL", issuer, doc.JWKSURI)
	}
	if err := SecureFor(issuer, "jwks_uri", doc.JWKSURI); err != nil {
		return "", fmt.Errorf("discovery of %s: %w (set auth.idp.jwks_url to the https address of its keys)", issuer, err)
	}
	return doc.JWKSURI, nil
}
