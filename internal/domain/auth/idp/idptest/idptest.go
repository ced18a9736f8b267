// Package idptest runs an identity provider for tests: a loopback server
// answering OpenID Connect discovery and serving a JWK Set of real RSA,
// ECDSA P-256 and Ed25519 keys, which signs tokens and rotates its keys
// on demand, and counts the requests for its keys.
package idptest

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
)

// JWKSPath is where the provider serves its keys.
const JWKSPath = "/keys"

// Provider is a running identity provider.
type Provider struct {
	// Issuer is its issuer URL, the server's address.
	Issuer string
	// JWKSURL is its JWK Set's address.
	JWKSURL string

	server *httptest.Server
	// keyRequests counts the requests for the JWK Set.
	keyRequests atomic.Int64
	// down makes the JWK Set answer 503.
	down atomic.Bool

	mu sync.Mutex
	// generation numbers the key sets; Rotate starts a new one.
	generation int
	keys       map[string]crypto.Signer // by alg
	// encKey is an RSA key the set publishes for encryption (use enc).
	encKey *rsa.PrivateKey
	set    json.RawMessage
}

// Algs are the algorithms the provider signs with.
var Algs = []string{"RS256", "ES256", "EdDSA"}

// New starts a provider with a key per algorithm; it stops at cleanup.
func New(t testing.TB) *Provider {
	t.Helper()
	p := &Provider{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": p.Issuer, "jwks_uri": p.JWKSURL, "id_token_signing_alg_values_supported": Algs,
		})
	})
	mux.HandleFunc("GET "+JWKSPath, func(w http.ResponseWriter, _ *http.Request) {
		p.keyRequests.Add(1)
		if p.down.Load() {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		p.mu.Lock()
		set := p.set
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/jwk-set+json")
		_, _ = w.Write(set)
	})
	p.server = httptest.NewServer(mux)
	t.Cleanup(p.server.Close)
	p.Issuer = p.server.URL
	p.JWKSURL = p.server.URL + JWKSPath
	if err := p.Rotate(); err != nil {
		t.Fatal(err)
	}
	return p
}

// SetDown makes the JWK Set answer 503 (down) or its keys again.
func (p *Provider) SetDown(down bool) { p.down.Store(down) }

// KeyRequests is how many times the JWK Set was fetched.
func (p *Provider) KeyRequests() int64 { return p.keyRequests.Load() }

// Rotate replaces every key with a new one under a new kid; the old keys
// are no longer served.
func (p *Provider) Rotate() error {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	encKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.generation++
	keys := map[string]crypto.Signer{"RS256": rsaKey, "ES256": ecKey, "EdDSA": edKey}
	store := jwkset.NewMemoryStorage()
	for alg, key := range keys {
		jwk, err := jwkset.NewJWKFromKey(key.Public(), jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{
			ALG: jwkset.ALG(alg), KID: p.kid(alg), USE: jwkset.UseSig,
		}})
		if err != nil {
			return err
		}
		if err := store.KeyWrite(context.Background(), jwk); err != nil {
			return err
		}
	}
	enc, err := jwkset.NewJWKFromKey(encKey.Public(), jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{
		KID: p.encKID(), USE: jwkset.UseEnc,
	}})
	if err != nil {
		return err
	}
	if err := store.KeyWrite(context.Background(), enc); err != nil {
		return err
	}
	set, err := store.JSONPublic(context.Background())
	if err != nil {
		return err
	}
	p.keys, p.encKey, p.set = keys, encKey, set
	return nil
}

// kid names alg's key of the current generation.
func (p *Provider) kid(alg string) string { return fmt.Sprintf("%s-%d", alg, p.generation) }

// encKID names the encryption key of the current generation.
func (p *Provider) encKID() string { return fmt.Sprintf("enc-%d", p.generation) }

// EncryptionKey is the RSA key the set publishes for encryption only, and
// its kid: a token signed with it must be refused.
func (p *Provider) EncryptionKey() (kid string, key crypto.Signer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.encKID(), p.encKey
}

// Sign signs claims with the current key for alg, naming its kid.
func (p *Provider) Sign(t testing.TB, alg string, claims jwt.Claims) string {
	t.Helper()
	p.mu.Lock()
	key, kid := p.keys[alg], p.kid(alg)
	p.mu.Unlock()
	return SignWith(t, alg, kid, key, claims)
}

// Signer is the current private key for alg, for tests that forge
// headers.
func (p *Provider) Signer(alg string) crypto.Signer {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.keys[alg]
}

// PublicKey is the current public key for alg.
func (p *Provider) PublicKey(alg string) crypto.PublicKey {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.keys[alg].Public()
}

// SignWith signs claims with key for alg, with kid in the header ("" for
// none).
func SignWith(t testing.TB, alg, kid string, key crypto.Signer, claims jwt.Claims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.GetSigningMethod(alg), claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
