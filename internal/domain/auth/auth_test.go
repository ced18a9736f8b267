package auth

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"
)

const secret = "auth-test-secret-0123456789"

func TestVerifier(t *testing.T) {
	t.Parallel()
	v, err := NewVerifier(secret)
	require.NoError(t, err)
	sandbox := Claims{Org: "o", Kind: KindSandbox, SessionID: "s", RegisteredClaims: jwt.RegisteredClaims{Subject: "sb"}}

	t.Run("RoundTrip", func(t *testing.T) {
		t.Parallel()
		tok, err := Mint(secret, sandbox, time.Hour)
		require.NoError(t, err)
		c, err := v.Verify(tok)
		require.NoError(t, err)
		require.Equal(t, "s", c.SessionID)
		require.False(t, c.CanAdminister())
		// A jti of its own, by which it alone can be revoked.
		again, err := Mint(secret, sandbox, time.Hour)
		require.NoError(t, err)
		other, err := v.Verify(again)
		require.NoError(t, err)
		require.NotEmpty(t, c.ID)
		require.NotEqual(t, c.ID, other.ID)
	})
	t.Run("Expired", func(t *testing.T) {
		t.Parallel()
		tok, err := Mint(secret, sandbox, -time.Hour)
		require.NoError(t, err)
		_, err = v.Verify(tok)
		require.ErrorIs(t, err, jwt.ErrTokenExpired)
	})
	t.Run("OtherSecret", func(t *testing.T) {
		t.Parallel()
		tok, err := Mint("another-secret-0123456789", sandbox, time.Hour)
		require.NoError(t, err)
		_, err = v.Verify(tok)
		require.ErrorIs(t, err, jwt.ErrTokenSignatureInvalid)
	})
	t.Run("AlgNone", func(t *testing.T) {
		t.Parallel()
		sandbox := sandbox
		sandbox.ExpiresAt = jwt.NewNumericDate(time.Now().Add(time.Hour))
		tok, err := jwt.NewWithClaims(jwt.SigningMethodNone, sandbox).SignedString(jwt.UnsafeAllowNoneSignatureType)
		require.NoError(t, err)
		_, err = v.Verify(tok)
		require.Error(t, err)
	})
	t.Run("NoExpiry", func(t *testing.T) {
		t.Parallel()
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, sandbox).SignedString([]byte(secret))
		require.NoError(t, err)
		_, err = v.Verify(tok)
		require.Error(t, err)
	})
	t.Run("InvalidClaims", func(t *testing.T) {
		t.Parallel()
		for _, c := range []Claims{
			{Kind: KindSandbox, SessionID: "s", RegisteredClaims: jwt.RegisteredClaims{Subject: "x"}},      // no org
			{Org: "o", Kind: KindSandbox, RegisteredClaims: jwt.RegisteredClaims{Subject: "x"}},            // no session
			{Org: "o", Kind: KindUser, Role: "root", RegisteredClaims: jwt.RegisteredClaims{Subject: "x"}}, // bad role
			{Org: "o", Kind: "robot", RegisteredClaims: jwt.RegisteredClaims{Subject: "x"}},                // bad kind
			{Org: "o", Kind: KindService}, // no sub
		} {
			c.ExpiresAt = jwt.NewNumericDate(time.Now().Add(time.Hour))
			tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString([]byte(secret))
			require.NoError(t, err)
			_, err = v.Verify(tok)
			require.Error(t, err, "%+v", c)
		}
	})
	t.Run("ShortSecretRefused", func(t *testing.T) {
		t.Parallel()
		_, err := NewVerifier("short")
		require.Error(t, err)
	})
}

func TestVerifier_RemembersTokensUntilTheyExpire(t *testing.T) {
	t.Parallel()
	clock := time.Now()
	v, err := New(context.Background(), &Config{Secret: secret, Now: func() time.Time { return clock }})
	require.NoError(t, err)
	claims := Claims{Org: "o", Kind: KindService, RegisteredClaims: jwt.RegisteredClaims{Subject: "svc"}}
	tok, err := Mint(secret, claims, time.Hour)
	require.NoError(t, err)

	c, err := v.Verify(tok)
	require.NoError(t, err)
	require.Len(t, v.known, 1)
	c.Org = "changed by a caller"
	c, err = v.Verify(tok)
	require.NoError(t, err)
	require.Equal(t, "o", c.Org, "a caller's change reached the remembered claims")

	// Past exp and the leeway, the remembered token is refused as a parsed
	// one would be.
	clock = clock.Add(time.Hour + DefaultLeeway + time.Second)
	_, err = v.Verify(tok)
	require.ErrorIs(t, err, jwt.ErrTokenExpired)

	// A token with another signature is parsed, not taken for the known one.
	clock = time.Now()
	_, err = v.Verify(tok[:len(tok)-2] + "AA")
	require.ErrorIs(t, err, jwt.ErrTokenSignatureInvalid)

	// The memory is bounded.
	for i := range maxKnown + 1 {
		claims.Subject = fmt.Sprintf("svc-%d", i)
		tok, err := Mint(secret, claims, time.Hour)
		require.NoError(t, err)
		_, err = v.Verify(tok)
		require.NoError(t, err)
	}
	require.LessOrEqual(t, len(v.known), maxKnown)
}

func TestVerifier_NilAcceptsNoToken(t *testing.T) {
	t.Parallel()
	tok, err := Mint(secret, Claims{Org: "o", Kind: KindService, RegisteredClaims: jwt.RegisteredClaims{Subject: "svc"}}, time.Hour)
	require.NoError(t, err)
	var v *Verifier
	_, err = v.Verify(tok)
	require.ErrorIs(t, err, errNoVerifier)
	v.Close()
}

func TestClaims_Permissions(t *testing.T) {
	t.Parallel()
	require.True(t, (&Claims{Kind: KindUser, Role: RoleOwner}).CanAdminister())
	require.True(t, (&Claims{Kind: KindUser, Role: RoleAdmin}).CanAdminister())
	require.False(t, (&Claims{Kind: KindUser, Role: RoleMember}).CanAdminister())
	require.False(t, (&Claims{Kind: KindService, Role: RoleOwner}).CanAdminister())
	require.True(t, (&Claims{}).MaySource("slack"))
	require.False(t, (&Claims{Sources: OnlySources("linear")}).MaySource("slack"))
}

// TestSourceClaim: a missing sources claim allows every source, a present
// one only what it lists, none when empty; minting writes each as it is,
// and a claim that is not a list is refused rather than taken for missing.
func TestSourceClaim(t *testing.T) {
	t.Parallel()
	v, err := NewVerifier(secret)
	require.NoError(t, err)
	for _, tc := range []struct {
		name    string
		claim   SourceClaim
		payload string // the claim as minted; "" when left out
		allowed []string
		refused []string
	}{
		{"Missing", SourceClaim{}, "", []string{"slack", "linear"}, nil},
		{"Empty", OnlySources(), `"sources":[]`, nil, []string{"slack", "linear", ""}},
		{"One", OnlySources("linear"), `"sources":["linear"]`, []string{"linear"}, []string{"slack"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tok, err := Mint(secret, Claims{Org: "o", Kind: KindService, Sources: tc.claim, RegisteredClaims: jwt.RegisteredClaims{Subject: "x"}}, time.Hour)
			require.NoError(t, err)
			payload, err := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[1])
			require.NoError(t, err)
			if tc.payload == "" {
				require.NotContains(t, string(payload), `"sources"`)
			} else {
				require.Contains(t, string(payload), tc.payload)
			}
			c, err := v.Verify(tok)
			require.NoError(t, err)
			require.Equal(t, tc.claim.Present(), c.Sources.Present())
			for _, id := range tc.allowed {
				require.True(t, c.MaySource(id), id)
			}
			for _, id := range tc.refused {
				require.False(t, c.MaySource(id), id)
			}
		})
	}
	for name, value := range map[string]any{"Null": nil, "String": "slack", "Object": map[string]any{}} {
		t.Run("Refuses"+name, func(t *testing.T) {
			t.Parallel()
			tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
				"org": "o", "sub": "x", "kind": "service", "sources": value, "exp": time.Now().Add(time.Hour).Unix(),
			}).SignedString([]byte(secret))
			require.NoError(t, err)
			_, err = v.Verify(tok)
			require.ErrorContains(t, err, "claim sources must be a list")
		})
	}
}

func TestVerifier_UnstorableClaims(t *testing.T) {
	t.Parallel()
	v, err := NewVerifier(secret)
	require.NoError(t, err)
	exp := time.Now().Add(time.Hour).Unix()
	base := func() jwt.MapClaims {
		return jwt.MapClaims{"org": "o", "sub": "x", "kind": "sandbox", "session_id": "s", "exp": exp}
	}
	long := strings.Repeat("a", maxClaimBytes+1)
	for _, tc := range []struct {
		claim string
		value any
	}{
		{"org", "o\x00"}, {"org", long}, {"org", "o\n"},
		{"sub", "\x00"}, {"sub", long},
		{"session_id", "s\x00"}, {"session_id", "s\x7f"}, {"session_id", long},
		{"automation_id", "a\x00"}, {"automation_id", long},
		{"user_id", "\x00u"}, {"user_id", long},
		{"sources", []string{"slack", "lin\x00ear"}}, {"sources", []string{long}},
		{"kind", "sandbox\x00"},
		// Revoked by its jti, a token's jti is stored too.
		{"jti", "j\x00"}, {"jti", long},
	} {
		t.Run(tc.claim, func(t *testing.T) {
			t.Parallel()
			c := base()
			c[tc.claim] = tc.value
			tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString([]byte(secret))
			require.NoError(t, err)
			_, err = v.Verify(tok)
			require.ErrorContains(t, err, "claim "+tc.claim)
		})
	}

	t.Run("InvalidUTF8", func(t *testing.T) {
		t.Parallel()
		// encoding/json repairs invalid UTF-8 in a token's payload, so this
		// only happens to claims built in code.
		c := Claims{Org: "o\xff", Kind: KindService, RegisteredClaims: jwt.RegisteredClaims{Subject: "x"}}
		require.ErrorContains(t, c.validate(), "claim org is not valid UTF-8")
		_, err := Mint(secret, c, time.Hour)
		require.Error(t, err)
	})
	t.Run("LongestAccepted", func(t *testing.T) {
		t.Parallel()
		c := base()
		c["session_id"] = strings.Repeat("é", maxClaimBytes/2)
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString([]byte(secret))
		require.NoError(t, err)
		_, err = v.Verify(tok)
		require.NoError(t, err)
	})
}

// TestSourceClaim_Filter: an absent claim filters nothing (nil: any
// source); a present one its ids, and "sources": [] an empty list, which
// allows none, never nil.
func TestSourceClaim_Filter(t *testing.T) {
	require.Nil(t, SourceClaim{}.Filter())
	require.Equal(t, []string{"github"}, OnlySources("github").Filter())
	none := OnlySources().Filter()
	require.NotNil(t, none)
	require.Empty(t, none)
}
