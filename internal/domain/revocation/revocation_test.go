package revocation_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/errs"
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

// TestService_RevokeBySubject: a revocation by subject refuses, on the
// other process at its refresh, every token of the organization that
// carries the subject (a user token, a console session) and ends their
// watched contexts; another person's, the same person's in another
// organization and one issued after the cut-off are not refused. A bad
// subject is refused and stores nothing.
func TestService_RevokeBySubject(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	here, err := revocation.New(&revocation.Deps{Pool: pool, Owner: pool}, &revocation.Config{MaxLifetime: time.Hour})
	require.NoError(t, err)
	there, err := revocation.New(&revocation.Deps{Pool: pool, Owner: pool}, &revocation.Config{MaxLifetime: time.Hour})
	require.NoError(t, err)
	require.NoError(t, there.Refresh(ctx))

	for name, p := range map[string]*revocation.Params{
		"NUL":      {Subject: "ali\x00ce"},
		"TooLong":  {Subject: strings.Repeat("a", 256)},
		"NotUTF8":  {Subject: "\xff"},
		"Control":  {Subject: "a\nb"},
		"AndJTI":   {Subject: "alice", JTI: "j1"},
		"AndOther": {Subject: "alice", AutomationID: "a1"},
	} {
		_, err := here.Revoke(ctx, "acme", p)
		var invalid *errs.ValidationError
		require.ErrorAs(t, err, &invalid, name)
	}
	var n int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM token_revocations").Scan(&n))
	require.Zero(t, n, "nothing stored")

	iat := jwt.NewNumericDate(time.Now().Add(-time.Minute))
	claims := func(org, sub string, iat *jwt.NumericDate) *auth.Claims {
		return &auth.Claims{Org: org, Kind: auth.KindUser, Role: auth.RoleMember, RegisteredClaims: jwt.RegisteredClaims{Subject: sub, IssuedAt: iat}}
	}
	user := claims("acme", "alice", iat)
	console := claims("acme", "alice", iat)
	console.Role, console.ID = auth.RoleAdmin, "console-1"
	others := []*auth.Claims{claims("acme", "bob", iat), claims("globex", "alice", iat)}
	watched, stop := there.Watch(ctx, console)
	defer stop()
	other, stopOther := there.Watch(ctx, others[0])
	defer stopOther()

	r, err := here.Revoke(ctx, "acme", &revocation.Params{Subject: "alice", By: "test"})
	require.NoError(t, err)
	require.Equal(t, "alice", r.Subject)
	require.NotNil(t, r.ExpiresAt)
	require.Equal(t, r.IssuedBefore.Add(time.Hour+auth.DefaultLeeway), *r.ExpiresAt)
	require.True(t, here.Revoked(user))
	require.NoError(t, there.Refresh(ctx))
	for _, c := range []*auth.Claims{user, console} {
		require.True(t, there.Revoked(c))
	}
	for _, c := range others {
		require.False(t, there.Revoked(c), "%s of %s", c.Subject, c.Org)
	}
	require.False(t, there.Revoked(claims("acme", "alice", jwt.NewNumericDate(r.IssuedBefore))), "issued at the cut-off")
	<-watched.Done()
	require.ErrorIs(t, context.Cause(watched), revocation.ErrRevoked)
	require.NoError(t, other.Err())

	listed, err := there.List(ctx, "acme")
	require.NoError(t, err)
	require.Len(t, listed, 1)
	require.Equal(t, "alice", listed[0].Subject)
}
