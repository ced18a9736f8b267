package auth

import (
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

func TestClaims_Permissions(t *testing.T) {
	t.Parallel()
	require.True(t, (&Claims{Kind: KindUser, Role: RoleOwner}).CanAdminister())
	require.True(t, (&Claims{Kind: KindUser, Role: RoleAdmin}).CanAdminister())
	require.False(t, (&Claims{Kind: KindUser, Role: RoleMember}).CanAdminister())
	require.False(t, (&Claims{Kind: KindService, Role: RoleOwner}).CanAdminister())
	require.True(t, (&Claims{}).MaySource("slack"))
	require.False(t, (&Claims{Sources: []string{"linear"}}).MaySource("slack"))
}
