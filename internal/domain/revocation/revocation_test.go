package revocation_test

import (
	"context"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/revocation"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

// TestService_RefreshWatchAndExpiry runs two Services on one database, as
// two processes: one learns of the other's revocation at its next refresh,
// which ends the watched context of the revoked token only; a revocation
// whose tokens have all expired is not listed and is deleted from the
// table by the next revocation.
func TestService_RefreshWatchAndExpiry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	cfg := &revocation.Config{MaxLifetime: time.Hour}
	here, err := revocation.New(&revocation.Deps{Pool: pool, Owner: pool}, cfg)
	require.NoError(t, err)
	there, err := revocation.New(&revocation.Deps{Pool: pool, Owner: pool}, cfg)
	require.NoError(t, err)
	require.NoError(t, there.Refresh(ctx))

	iat := jwt.NewNumericDate(time.Now().Add(-time.Minute))
	revoked := &auth.Claims{Org: "acme", Kind: auth.KindSandbox, SessionID: "s1", RegisteredClaims: jwt.RegisteredClaims{IssuedAt: iat}}
	kept := &auth.Claims{Org: "acme", Kind: auth.KindSandbox, SessionID: "s2", RegisteredClaims: jwt.RegisteredClaims{IssuedAt: iat}}
	watched, stop := there.Watch(ctx, revoked)
	defer stop()
	other, stopOther := there.Watch(ctx, kept)
	defer stopOther()

	// Long expired: every token issued before it has expired.
	past := time.Now().Add(-3 * time.Hour)
	old, err := here.Revoke(ctx, "acme", &revocation.Params{IssuedBefore: &past, By: "test"})
	require.NoError(t, err)
	require.True(t, old.ExpiresAt.Before(time.Now()))
	listed, err := here.List(ctx, "acme")
	require.NoError(t, err)
	require.Empty(t, listed, "an expired revocation is not in effect")

	r, err := here.Revoke(ctx, "acme", &revocation.Params{SessionID: "s1", By: "test"})
	require.NoError(t, err)
	require.True(t, here.Revoked(revoked), "the revoking process applies it at once")
	require.False(t, there.Revoked(revoked), "the other has not refreshed yet")
	require.NoError(t, watched.Err())

	require.NoError(t, there.Refresh(ctx))
	require.True(t, there.Revoked(revoked))
	require.False(t, there.Revoked(kept))
	<-watched.Done()
	require.ErrorIs(t, context.Cause(watched), revocation.ErrRevoked)
	require.NoError(t, other.Err())

	var ids []int64
	rows, err := pool.Query(ctx, "SELECT id FROM token_revocations ORDER BY id")
	require.NoError(t, err)
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []int64{r.ID}, ids, "the expired revocation was deleted by the next one")
}
