package revocation_test

import (
	"context"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/revocation"
)

// TestEnds_PreviousSecretOverlap: a token signed with the previous HS256
// secret is accepted until auth.jwt_secret_previous_until, not until its
// exp; a stream it opens (an event stream, MCP's) ends then too, not at
// its exp: after a rotation the old secret's tokens stop everywhere at the
// end of the documented overlap.
func TestEnds_PreviousSecretOverlap(t *testing.T) {
	t.Parallel()
	const oldSecret, newSecret = "the-old-secret-0123456789", "the-new-secret-0123456789"
	now := time.Now().Truncate(time.Second)
	until := now.Add(time.Hour)
	v, err := auth.New(context.Background(), &auth.Config{
		Secret: newSecret, PreviousSecret: oldSecret, PreviousSecretUntil: until, Now: func() time.Time { return now },
	})
	require.NoError(t, err)
	claims := auth.Claims{Org: "acme", Kind: auth.KindSandbox, SessionID: "s1", RegisteredClaims: jwt.RegisteredClaims{Subject: "agent"}}
	old, err := auth.Mint(oldSecret, claims, 10*time.Hour)
	require.NoError(t, err)
	current, err := auth.Mint(newSecret, claims, 10*time.Hour)
	require.NoError(t, err)

	c, err := v.Verify(old)
	require.NoError(t, err)
	ctx, stop := revocation.Ends(context.Background(), nil, c, v.Leeway())
	defer stop()
	deadline, ok := ctx.Deadline()
	require.True(t, ok)
	require.Equal(t, until, deadline, "the old secret's token ends with the overlap")

	c, err = v.Verify(current)
	require.NoError(t, err)
	ctx, stop = revocation.Ends(context.Background(), nil, c, v.Leeway())
	defer stop()
	deadline, ok = ctx.Deadline()
	require.True(t, ok)
	require.Equal(t, c.ExpiresAt.Add(v.Leeway()), deadline, "the current secret's token ends at its exp and the leeway")
}
