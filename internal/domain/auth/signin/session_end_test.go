package signin_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/auth/signin"
	"github.com/outboxd/outboxd/internal/domain/auth/signin/signintest"
	"github.com/outboxd/outboxd/internal/domain/revocation"
)

// TestSignIn_StreamEndsWithTheSession: a console session is refused from
// its expiry on, with no leeway (Session); an event stream the session
// opened ends then too, not the verifier's leeway later.
func TestSignIn_StreamEndsWithTheSession(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const origin = "https://outboxd.example.com"
	b.provider.AllowOrigin(origin)
	s := b.signIn(t, signin.Config{RedirectURL: origin + signin.CallbackPath, Scopes: []string{"openid", signintest.Scope}})
	location, flow, err := s.Start(httptest.NewRequest("GET", "http://internal:8080/auth/login", nil))
	require.NoError(t, err)
	req := httptest.NewRequest("GET", b.signInAt(t, location, "outboxd.example.com"), nil)
	req.AddCookie(flow)
	_, cookies, err := s.Finish(req)
	require.NoError(t, err)

	req = httptest.NewRequest("GET", "http://internal:8080/v1/events", nil)
	req.AddCookie(cookies[0])
	sess, err := s.Session(req)
	require.NoError(t, err)
	ctx, stop := revocation.Ends(context.Background(), nil, sess.Claims, auth.DefaultLeeway)
	defer stop()
	deadline, ok := ctx.Deadline()
	require.True(t, ok)
	require.Equal(t, sess.Claims.ExpiresAt.Time, deadline)
}
