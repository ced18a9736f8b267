package revocation_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/auth/idp/idptest"
	"github.com/outboxd/outboxd/internal/domain/revocation"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

// TestWatch_WithdrawnKeyEndsStreams: a stream (a watched context) of an
// identity provider's token ends once the provider no longer publishes
// the token's signing key and outboxd has fetched its keys again, as every
// new request with the token is refused then; a stream of a token of the
// current keys goes on.
func TestWatch_WithdrawnKeyEndsStreams(t *testing.T) {
	t.Parallel()
	p := idptest.New(t)
	v, err := auth.New(context.Background(), &auth.Config{IdP: auth.IdPConfig{
		Issuer: p.Issuer, Audience: []string{"outboxd"}, Defaults: auth.ClaimDefaults{Kind: auth.KindService},
	}})
	require.NoError(t, err)
	t.Cleanup(v.Close)
	claims := func() jwt.MapClaims {
		return jwt.MapClaims{"iss": p.Issuer, "aud": "outboxd", "sub": "svc", "org": "acme",
			"iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()}
	}
	pool := pgtest.Pool(t)
	svc, err := revocation.New(&revocation.Deps{Pool: pool, Owner: pool}, &revocation.Config{RefreshInterval: 20 * time.Millisecond})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go svc.Run(ctx)

	old, err := v.Verify(p.Sign(t, "ES256", claims()))
	require.NoError(t, err)
	oldStream, stop := revocation.Ends(context.Background(), svc, old, v.Leeway())
	defer stop()

	require.NoError(t, p.Rotate())
	current, err := v.Verify(p.Sign(t, "ES256", claims())) // fetches the rotated set
	require.NoError(t, err)
	currentStream, stopCurrent := revocation.Ends(context.Background(), svc, current, v.Leeway())
	defer stopCurrent()

	select {
	case <-oldStream.Done():
	case <-time.After(15 * time.Second):
		t.Fatal("the stream of a token whose key was withdrawn did not end")
	}
	require.ErrorIs(t, context.Cause(oldStream), revocation.ErrKeyWithdrawn)
	require.True(t, errors.Is(context.Cause(oldStream), revocation.ErrRevoked), "a stream says: token revoked")
	require.NoError(t, currentStream.Err(), "the current key's token's stream goes on")
}
