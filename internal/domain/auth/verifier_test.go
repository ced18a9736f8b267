package auth_test

import (
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/auth/idp"
	"github.com/outboxd/outboxd/internal/domain/auth/idp/idptest"
)

const (
	hsSecret = "verifier-test-secret-0123456789"
	audience = "outboxd-test"
)

// clock is a settable clock for Config.Now.
type clock struct{ now atomic.Pointer[time.Time] }

func newClock() *clock {
	c := &clock{}
	c.set(time.Now())
	return c
}
func (c *clock) set(t time.Time)                     { c.now.Store(&t) }
func (c *clock) Now() time.Time                      { return *c.now.Load() }
func (c *clock) add(d time.Duration)                 { c.set(c.Now().Add(d)) }
func (c *clock) at(d time.Duration) *jwt.NumericDate { return jwt.NewNumericDate(c.Now().Add(d)) }

// idpClaims are an identity provider's token claims in outboxd's names.
func idpClaims(p *idptest.Provider, clk *clock, extra jwt.MapClaims) jwt.MapClaims {
	c := jwt.MapClaims{
		"iss": p.Issuer, "aud": []string{"other", audience}, "sub": "alice",
		"org": "acme", "kind": "user", "role": "admin",
		"iat": clk.at(-time.Minute).Unix(), "exp": clk.at(time.Hour).Unix(),
	}
	for k, v := range extra {
		if v == nil {
			delete(c, k)
			continue
		}
		c[k] = v
	}
	return c
}

type testBundle struct {
	idp   *idptest.Provider
	clock *clock
	v     *auth.Verifier
}

func setup(t *testing.T, cfg *auth.Config) *testBundle {
	t.Helper()
	b := &testBundle{idp: idptest.New(t), clock: newClock()}
	if cfg == nil {
		cfg = &auth.Config{}
	}
	c := *cfg
	c.Now = b.clock.Now
	c.IdP.Issuer = b.idp.Issuer
	if c.IdP.Audience == nil {
		c.IdP.Audience = []string{audience}
	}
	v, err := auth.New(context.Background(), &c)
	require.NoError(t, err)
	t.Cleanup(v.Close)
	b.v = v
	return b
}

func TestVerifier_IdP(t *testing.T) {
	t.Parallel()
	b := setup(t, &auth.Config{Secret: hsSecret})

	t.Run("EachAlgAccepted", func(t *testing.T) {
		t.Parallel()
		for _, alg := range idptest.Algs {
			c, err := b.v.Verify(b.idp.Sign(t, alg, idpClaims(b.idp, b.clock, jwt.MapClaims{"sub": "alice-" + alg, "jti": "j-" + alg})))
			require.NoError(t, err, alg)
			require.Equal(t, "acme", c.Org)
			require.Equal(t, "alice-"+alg, c.Subject)
			require.Equal(t, "j-"+alg, c.ID)
			require.Equal(t, b.idp.Issuer, c.Issuer)
			require.True(t, c.CanAdminister())
			require.False(t, c.Sources.Present())
		}
	})
	t.Run("WithoutKidAccepted", func(t *testing.T) {
		t.Parallel()
		// No kid: every key of the set is tried.
		tok := idptest.SignWith(t, "ES256", "", b.idp.Signer("ES256"), idpClaims(b.idp, b.clock, jwt.MapClaims{"sub": "nokid"}))
		_, err := b.v.Verify(tok)
		require.NoError(t, err)
	})
	refused := []struct {
		name  string
		extra jwt.MapClaims
		err   error
	}{
		{"WrongIssuer", jwt.MapClaims{"iss": "https://evil.example"}, jwt.ErrTokenInvalidIssuer},
		{"NoIssuer", jwt.MapClaims{"iss": nil}, jwt.ErrTokenRequiredClaimMissing},
		{"WrongAudience", jwt.MapClaims{"aud": "someone-else"}, jwt.ErrTokenInvalidAudience},
		{"NoAudience", jwt.MapClaims{"aud": nil}, jwt.ErrTokenRequiredClaimMissing},
		{"ExpiredBeyondLeeway", jwt.MapClaims{"exp": b.clock.at(-auth.DefaultLeeway - time.Second).Unix()}, jwt.ErrTokenExpired},
		{"NotYetValidBeyondLeeway", jwt.MapClaims{"nbf": b.clock.at(auth.DefaultLeeway + time.Minute).Unix()}, jwt.ErrTokenNotValidYet},
		{"NoExpiry", jwt.MapClaims{"exp": nil}, jwt.ErrTokenRequiredClaimMissing},
		{"OrgNotAString", jwt.MapClaims{"org": 42}, nil},
		{"NoOrg", jwt.MapClaims{"org": nil}, nil},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := b.v.Verify(b.idp.Sign(t, "RS256", idpClaims(b.idp, b.clock, tc.extra)))
			require.Error(t, err)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
			}
		})
	}
	t.Run("WithinLeewayAccepted", func(t *testing.T) {
		t.Parallel()
		for _, extra := range []jwt.MapClaims{
			{"sub": "late", "exp": b.clock.at(-auth.DefaultLeeway / 2).Unix()},
			{"sub": "early", "nbf": b.clock.at(auth.DefaultLeeway / 2).Unix()},
		} {
			_, err := b.v.Verify(b.idp.Sign(t, "EdDSA", idpClaims(b.idp, b.clock, extra)))
			require.NoError(t, err, extra)
		}
	})
	t.Run("AlgNone", func(t *testing.T) {
		t.Parallel()
		tok, err := jwt.NewWithClaims(jwt.SigningMethodNone, idpClaims(b.idp, b.clock, nil)).SignedString(jwt.UnsafeAllowNoneSignatureType)
		require.NoError(t, err)
		_, err = b.v.Verify(tok)
		require.ErrorIs(t, err, jwt.ErrTokenSignatureInvalid)
	})
	t.Run("HS256WithThePublicKey", func(t *testing.T) {
		t.Parallel()
		// The classic confusion: HS256 with the provider's public key as
		// the secret, in the encodings a verifier might hand over.
		der, err := x509.MarshalPKIXPublicKey(b.idp.PublicKey("RS256"))
		require.NoError(t, err)
		for _, secret := range [][]byte{der, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})} {
			tok := jwt.NewWithClaims(jwt.SigningMethodHS256, idpClaims(b.idp, b.clock, nil))
			tok.Header["kid"] = "RS256-1"
			s, err := tok.SignedString(secret)
			require.NoError(t, err)
			_, err = b.v.Verify(s)
			require.ErrorIs(t, err, jwt.ErrTokenSignatureInvalid)
		}
	})
	t.Run("KeyOfAnotherAlg", func(t *testing.T) {
		t.Parallel()
		// Signed with the ES256 key but naming the RSA key's kid.
		tok := idptest.SignWith(t, "ES256", "RS256-1", b.idp.Signer("ES256"), idpClaims(b.idp, b.clock, nil))
		_, err := b.v.Verify(tok)
		require.ErrorIs(t, err, idp.ErrUnknownKey)
	})
	t.Run("EncryptionKey", func(t *testing.T) {
		t.Parallel()
		kid, key := b.idp.EncryptionKey()
		_, err := b.v.Verify(idptest.SignWith(t, "RS256", kid, key, idpClaims(b.idp, b.clock, nil)))
		require.ErrorIs(t, err, idp.ErrUnknownKey)
	})
	t.Run("WithoutKidNotByTheEncryptionKey", func(t *testing.T) {
		t.Parallel()
		// Without a kid every signing key is tried, but a key published
		// for encryption still verifies nothing.
		_, key := b.idp.EncryptionKey()
		_, err := b.v.Verify(idptest.SignWith(t, "RS256", "", key, idpClaims(b.idp, b.clock, nil)))
		require.ErrorIs(t, err, jwt.ErrTokenSignatureInvalid)
	})
	t.Run("UnknownKey", func(t *testing.T) {
		t.Parallel()
		other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		_, err = b.v.Verify(idptest.SignWith(t, "ES256", "ES256-1", other, idpClaims(b.idp, b.clock, nil)))
		require.ErrorIs(t, err, jwt.ErrTokenSignatureInvalid, "the kid is known, the signature is not its key's")
	})
}

func TestVerifier_IdPOnlyRefusesHS256(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	tok, err := auth.Mint(hsSecret, auth.Claims{Org: "o", Kind: auth.KindService, RegisteredClaims: jwt.RegisteredClaims{Subject: "svc"}}, time.Hour)
	require.NoError(t, err)
	_, err = b.v.Verify(tok)
	require.ErrorIs(t, err, jwt.ErrTokenSignatureInvalid)
	_, err = b.v.Verify(b.idp.Sign(t, "RS256", idpClaims(b.idp, b.clock, nil)))
	require.NoError(t, err)
}

func TestVerifier_HS256AndIdPSideBySide(t *testing.T) {
	t.Parallel()
	// The provider's claims are mapped; HS256 tokens keep outboxd's names.
	b := setup(t, &auth.Config{Secret: hsSecret, IdP: auth.IdPConfig{Claims: auth.ClaimNames{Org: "tenant"}}})
	tok, err := auth.Mint(hsSecret, auth.Claims{Org: "o", Kind: auth.KindSandbox, SessionID: "s", RegisteredClaims: jwt.RegisteredClaims{Subject: "sb"}}, time.Hour)
	require.NoError(t, err)
	c, err := b.v.Verify(tok)
	require.NoError(t, err)
	require.Equal(t, "o", c.Org)
	require.Equal(t, "s", c.SessionID)

	c, err = b.v.Verify(b.idp.Sign(t, "ES256", idpClaims(b.idp, b.clock, jwt.MapClaims{"tenant": "acme", "org": "not-read"})))
	require.NoError(t, err)
	require.Equal(t, "acme", c.Org)
}

func TestVerifier_KeyRotation(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	require.EqualValues(t, 1, b.idp.KeyRequests(), "the keys are fetched at start")
	before := b.idp.Sign(t, "RS256", idpClaims(b.idp, b.clock, jwt.MapClaims{"sub": "before"}))
	_, err := b.v.Verify(before)
	require.NoError(t, err)
	require.EqualValues(t, 1, b.idp.KeyRequests(), "known keys are cached")

	require.NoError(t, b.idp.Rotate())
	for _, alg := range idptest.Algs {
		_, err := b.v.Verify(b.idp.Sign(t, alg, idpClaims(b.idp, b.clock, jwt.MapClaims{"sub": "after"})))
		require.NoError(t, err, "a token of the rotated %s key", alg)
	}
	require.EqualValues(t, 2, b.idp.KeyRequests(), "the first unknown kid fetched the keys once")

	// The old keys are gone from the set: a new token signed with one is
	// refused, as is one verified before the rotation
	// (TestVerifier_RemovedKeyEndsRememberedTokens).
	_, err = b.v.Verify(signedByRetiredKey(t, b))
	require.ErrorIs(t, err, idp.ErrUnknownKey)
}

// signedByRetiredKey returns a token whose kid is of a generation the
// provider no longer serves.
func signedByRetiredKey(t *testing.T, b *testBundle) string {
	t.Helper()
	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	return idptest.SignWith(t, "ES256", "ES256-1", other, idpClaims(b.idp, b.clock, jwt.MapClaims{"sub": "retired"}))
}

func TestVerifier_UnknownKIDFloodIsBounded(t *testing.T) {
	t.Parallel()
	b := setup(t, &auth.Config{IdP: auth.IdPConfig{UnknownKIDInterval: time.Hour}})
	forger, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	toks := make([]string, 200)
	for i := range toks {
		toks[i] = idptest.SignWith(t, "ES256", fmt.Sprintf("forged-%d", i), forger, idpClaims(b.idp, b.clock, nil))
	}
	errs := make([]error, len(toks))
	var wg sync.WaitGroup
	for i, tok := range toks {
		wg.Go(func() { _, errs[i] = b.v.Verify(tok) })
	}
	wg.Wait()
	for _, err := range errs {
		require.ErrorIs(t, err, idp.ErrUnknownKey)
	}
	require.EqualValues(t, 2, b.idp.KeyRequests(), "the start-up fetch and one refresh for unknown kids")

	// A rotation within the interval waits for it (or the periodic
	// refresh); the keys in hand keep working meanwhile.
	_, err = b.v.Verify(b.idp.Sign(t, "EdDSA", idpClaims(b.idp, b.clock, nil)))
	require.NoError(t, err)
}

func TestVerifier_ClaimMapping(t *testing.T) {
	t.Parallel()
	b := setup(t, &auth.Config{IdP: auth.IdPConfig{
		Claims: auth.ClaimNames{
			Subject: "email", Org: "https://outboxd.example/org", Role: "outboxd_role",
			AutomationID: "azp", UserID: "uid", Sources: "allowed_sources",
		},
		Defaults: auth.ClaimDefaults{Kind: auth.KindUser, Role: auth.RoleMember},
	}})
	mapped := jwt.MapClaims{
		"org": nil, "kind": nil, "role": nil, "sub": "opaque-id",
		"email": "alice@example.com", "email_verified": true, "https://outboxd.example/org": "acme", "outboxd_role": "owner",
		"uid": "u-1", "allowed_sources": []string{"linear"},
	}
	c, err := b.v.Verify(b.idp.Sign(t, "RS256", idpClaims(b.idp, b.clock, mapped)))
	require.NoError(t, err)
	require.Equal(t, "alice@example.com", c.Subject)
	require.Equal(t, "acme", c.Org)
	require.Equal(t, auth.KindUser, c.Kind, "the default kind")
	require.Equal(t, auth.RoleOwner, c.Role)
	require.Equal(t, "u-1", c.UserID)
	require.True(t, c.MaySource("linear"))
	require.False(t, c.MaySource("slack"))

	// The default role fills a missing claim.
	mapped["outboxd_role"] = nil
	c, err = b.v.Verify(b.idp.Sign(t, "RS256", idpClaims(b.idp, b.clock, mapped)))
	require.NoError(t, err)
	require.Equal(t, auth.RoleMember, c.Role)
	require.False(t, c.CanAdminister())

	// A list (an identity provider's groups) gives the highest role in it.
	mapped["outboxd_role"] = []string{"staff", "admin", "member"}
	c, err = b.v.Verify(b.idp.Sign(t, "RS256", idpClaims(b.idp, b.clock, mapped)))
	require.NoError(t, err)
	require.Equal(t, auth.RoleAdmin, c.Role)
	mapped["outboxd_role"] = []string{"staff"}
	c, err = b.v.Verify(b.idp.Sign(t, "RS256", idpClaims(b.idp, b.clock, mapped)))
	require.NoError(t, err)
	require.Equal(t, auth.RoleMember, c.Role, "none of outboxd's roles: the default")
	mapped["outboxd_role"] = nil

	// outboxd's own names are not read when others are configured.
	_, err = b.v.Verify(b.idp.Sign(t, "RS256", idpClaims(b.idp, b.clock, jwt.MapClaims{"email": "bob@example.com", "email_verified": true})))
	require.ErrorContains(t, err, "no org claim")

	// A sources claim that is not a list restricts nothing: it is refused.
	mapped["allowed_sources"] = "linear"
	_, err = b.v.Verify(b.idp.Sign(t, "RS256", idpClaims(b.idp, b.clock, mapped)))
	require.ErrorContains(t, err, "allowed_sources must be a list")
}

func TestVerifier_PreviousSecret(t *testing.T) {
	t.Parallel()
	const oldSecret = "the-old-secret-0123456789"
	clk := newClock()
	v, err := auth.New(context.Background(), &auth.Config{
		Secret: hsSecret, PreviousSecret: oldSecret, PreviousSecretUntil: clk.Now().Add(time.Hour), Now: clk.Now,
	})
	require.NoError(t, err)
	claims := auth.Claims{Org: "o", Kind: auth.KindService, RegisteredClaims: jwt.RegisteredClaims{Subject: "svc"}}
	oldTok, err := auth.Mint(oldSecret, claims, 3*time.Hour)
	require.NoError(t, err)
	newTok, err := auth.Mint(hsSecret, claims, 3*time.Hour)
	require.NoError(t, err)
	other, err := auth.Mint("neither-secret-0123456789", claims, 3*time.Hour)
	require.NoError(t, err)

	for _, tok := range []string{oldTok, newTok} {
		_, err = v.Verify(tok)
		require.NoError(t, err)
	}
	_, err = v.Verify(other)
	require.ErrorIs(t, err, jwt.ErrTokenSignatureInvalid)

	// After the overlap the previous secret's tokens are refused, the one
	// remembered from before included.
	clk.add(time.Hour + time.Second)
	_, err = v.Verify(oldTok)
	require.ErrorIs(t, err, jwt.ErrTokenSignatureInvalid)
	_, err = v.Verify(newTok)
	require.NoError(t, err)

	_, err = auth.New(context.Background(), &auth.Config{Secret: hsSecret, PreviousSecret: oldSecret})
	require.ErrorContains(t, err, "auth.jwt_secret_previous_until")
}

func TestVerifier_MaxLifetime(t *testing.T) {
	t.Parallel()
	b := setup(t, &auth.Config{Secret: hsSecret, MaxLifetime: time.Hour})
	claims := auth.Claims{Org: "o", Kind: auth.KindService, RegisteredClaims: jwt.RegisteredClaims{Subject: "svc"}}
	short, err := auth.Mint(hsSecret, claims, 30*time.Minute)
	require.NoError(t, err)
	_, err = b.v.Verify(short)
	require.NoError(t, err)
	long, err := auth.Mint(hsSecret, claims, 30*24*time.Hour)
	require.NoError(t, err)
	_, err = b.v.Verify(long)
	require.ErrorIs(t, err, auth.ErrTokenTooLong)
	require.ErrorContains(t, err, "valid for 720h0m0s, longer than the 1h0m0s outboxd accepts (auth.max_lifetime)")
	require.NotContains(t, err.Error(), hsSecret)

	for name, extra := range map[string]jwt.MapClaims{
		"NoIat":     {"iat": nil, "exp": b.clock.at(2 * time.Hour).Unix()},
		"LongAgo":   {"iat": b.clock.at(-2 * time.Hour).Unix(), "exp": b.clock.at(time.Minute).Unix()},
		"FutureIat": {"iat": b.clock.at(20 * time.Second).Unix(), "exp": b.clock.at(2 * time.Hour).Unix()},
	} {
		_, err := b.v.Verify(b.idp.Sign(t, "ES256", idpClaims(b.idp, b.clock, extra)))
		require.ErrorIs(t, err, auth.ErrTokenTooLong, name)
	}
}

func TestNew_Config(t *testing.T) {
	t.Parallel()
	p := idptest.New(t)
	for _, tc := range []struct {
		cfg auth.Config
		err string
	}{
		{auth.Config{}, "auth.jwt_secret or auth.idp.issuer is required"},
		{auth.Config{Secret: "short"}, "at least 16 characters"},
		{auth.Config{Secret: hsSecret, IdP: auth.IdPConfig{JWKSURL: p.JWKSURL}}, "auth.idp.issuer is required"},
		{auth.Config{IdP: auth.IdPConfig{Issuer: p.Issuer}}, "auth.idp.audience is required"},
		{auth.Config{IdP: auth.IdPConfig{Issuer: p.Issuer, Audience: []string{"a"}, Defaults: auth.ClaimDefaults{Kind: "robot"}}}, "auth.idp.defaults.kind"},
		{auth.Config{IdP: auth.IdPConfig{Issuer: p.Issuer + "/other", Audience: []string{"a"}}}, "discovery"},
		{auth.Config{IdP: auth.IdPConfig{Issuer: "ftp://idp.example", Audience: []string{"a"}}}, "not an http(s) URL"},
	} {
		_, err := auth.New(context.Background(), &tc.cfg)
		require.ErrorContains(t, err, tc.err)
	}

	// A JWKS URL skips discovery; iss is still checked against the issuer.
	clk := newClock()
	v, err := auth.New(context.Background(), &auth.Config{Now: clk.Now, IdP: auth.IdPConfig{
		Issuer: "https://issuer.example", JWKSURL: p.JWKSURL, Audience: []string{audience},
	}})
	require.NoError(t, err)
	t.Cleanup(v.Close)
	_, err = v.Verify(p.Sign(t, "RS256", idpClaims(p, clk, jwt.MapClaims{"iss": "https://issuer.example"})))
	require.NoError(t, err)
	_, err = v.Verify(p.Sign(t, "RS256", idpClaims(p, clk, nil)))
	require.ErrorIs(t, err, jwt.ErrTokenInvalidIssuer)
}

// revokedSet is a Revocations revoking the subjects it lists.
type revokedSet struct{ subjects sync.Map }

func (r *revokedSet) Revoked(c *auth.Claims) bool {
	_, ok := r.subjects.Load(c.Subject)
	return ok
}

// TestVerifier_Revocations: a token verified and remembered is refused
// with ErrTokenRevoked once revoked, and a token that is not revoked keeps
// working.
func TestVerifier_Revocations(t *testing.T) {
	t.Parallel()
	revoked := &revokedSet{}
	v, err := auth.New(context.Background(), &auth.Config{Secret: hsSecret, Revocations: revoked})
	require.NoError(t, err)
	mint := func(sub string) string {
		tok, err := auth.Mint(hsSecret, auth.Claims{Org: "acme", Kind: auth.KindService, RegisteredClaims: jwt.RegisteredClaims{Subject: sub}}, time.Hour)
		require.NoError(t, err)
		return tok
	}
	alice, bob := mint("alice"), mint("bob")
	for range 2 { // verified, then remembered
		_, err := v.Verify(alice)
		require.NoError(t, err)
	}
	revoked.subjects.Store("alice", true)
	_, err = v.Verify(alice)
	require.ErrorIs(t, err, auth.ErrTokenRevoked, "the remembered token is refused")
	_, err = v.Verify(bob)
	require.NoError(t, err)
	revoked.subjects.Delete("alice")
	_, err = v.Verify(alice)
	require.NoError(t, err)
}

// TestVerifier_MistypedClaimNotDefaulted: a claim present with another
// type than a string is refused, not replaced by auth.idp.defaults: a
// token whose org is a list of organizations is not taken for the
// default organization's.
func TestVerifier_MistypedClaimNotDefaulted(t *testing.T) {
	t.Parallel()
	b := setup(t, &auth.Config{IdP: auth.IdPConfig{
		Defaults: auth.ClaimDefaults{Org: "acme", Kind: auth.KindUser, Role: auth.RoleMember},
	}})
	for name, v := range map[string]any{"org": []string{"acme", "globex"}, "kind": 1, "sub": true} {
		_, err := b.v.Verify(b.idp.Sign(t, "RS256", idpClaims(b.idp, b.clock, jwt.MapClaims{name: v})))
		require.ErrorContains(t, err, "claim "+name+" must be a string", name)
	}
}

// TestVerifier_FutureIatRefused: a token issued in the future (beyond the
// leeway) is refused. Accepted, it could not be revoked: every revocation
// refuses the tokens issued before its cut-off, which cannot be in the
// future, and its iat stays after them all while it is valid.
func TestVerifier_FutureIatRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, &auth.Config{Secret: hsSecret, MaxLifetime: time.Hour})
	sign := func(iat time.Duration) string {
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
			"org": "acme", "kind": "service", "sub": "svc", "jti": "j",
			"iat": b.clock.at(iat).Unix(), "exp": b.clock.at(50 * time.Minute).Unix(),
		}).SignedString([]byte(hsSecret))
		require.NoError(t, err)
		return tok
	}
	_, err := b.v.Verify(sign(30 * time.Minute))
	require.ErrorIs(t, err, jwt.ErrTokenUsedBeforeIssued)
	_, err = b.v.Verify(b.idp.Sign(t, "ES256", idpClaims(b.idp, b.clock, jwt.MapClaims{"iat": b.clock.at(30 * time.Minute).Unix()})))
	require.ErrorIs(t, err, jwt.ErrTokenUsedBeforeIssued)
	_, err = b.v.Verify(sign(10 * time.Second))
	require.NoError(t, err, "within the leeway: clocks differ")
}

// TestVerifier_Leeway: Leeway is the leeway Verify applies on exp, the
// default's or auth.leeway, which event streams end by.
func TestVerifier_Leeway(t *testing.T) {
	t.Parallel()
	for _, leeway := range []time.Duration{0, 5 * time.Second} {
		clk := newClock()
		v, err := auth.New(context.Background(), &auth.Config{Secret: hsSecret, Leeway: leeway, Now: clk.Now})
		require.NoError(t, err)
		require.Equal(t, cmp.Or(leeway, auth.DefaultLeeway), v.Leeway())
		tok, err := auth.Mint(hsSecret, auth.Claims{Org: "o", Kind: auth.KindService, RegisteredClaims: jwt.RegisteredClaims{Subject: "svc"}}, time.Hour)
		require.NoError(t, err)
		c, err := v.Verify(tok)
		require.NoError(t, err)
		clk.set(c.ExpiresAt.Add(v.Leeway() - time.Second))
		_, err = v.Verify(tok)
		require.NoError(t, err, "within the leeway after exp")
		clk.set(c.ExpiresAt.Add(v.Leeway() + time.Second))
		_, err = v.Verify(tok)
		require.ErrorIs(t, err, jwt.ErrTokenExpired, "past the leeway after exp")
	}
	require.Zero(t, (*auth.Verifier)(nil).Leeway(), "a nil verifier lets no token in")
}
