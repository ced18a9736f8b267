package api_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/auth/signin"
	"github.com/outboxd/outboxd/internal/domain/auth/signin/signintest"
)

// TestConsoleSignIn_SignOutEndsTheSessionInEveryProcess: two API
// processes share one Postgres and secrets.key, so a console session
// cookie works on both. Signing out on one ends the session on the other
// too, within its revocation refresh: a copy of the cookie is refused on
// REST, and an event stream the cookie opened there before ends.
func TestConsoleSignIn_SignOutEndsTheSessionInEveryProcess(t *testing.T) {
	t.Parallel()
	sb := startSignIn(t)
	api2 := sb.secondProcess(t)
	br := newBrowser(t)
	resp, page := sb.signIn(t, br, signintest.Admin)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	status, me := br.call(t, "GET", sb.URL+"/auth/session")
	require.Equal(t, http.StatusOK, status, me)
	u, err := http.NewRequest("GET", sb.URL, nil)
	require.NoError(t, err)
	var cookie *http.Cookie
	for _, c := range br.Jar.Cookies(u.URL) {
		if c.Name == signin.SessionCookie {
			cookie = c
		}
	}
	require.NotNil(t, cookie)

	status, body := withCookie(t, api2.URL+"/v1/invocations", cookie.Value)
	require.Equal(t, http.StatusOK, status, "the other process takes the cookie: %s", body)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", api2.URL+"/v1/events", nil)
	require.NoError(t, err)
	req.AddCookie(&http.Cookie{Name: signin.SessionCookie, Value: cookie.Value})
	stream, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, stream.StatusCode)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		_, _ = io.Copy(io.Discard, stream.Body)
		stream.Body.Close()
	}()

	status, out := br.call(t, "POST", sb.URL+"/auth/logout", signin.CSRFHeader, me["csrf_token"].(string))
	require.Equal(t, http.StatusOK, status, out)

	deadline := time.Now().Add(revocationWait)
	for {
		status, body = withCookie(t, api2.URL+"/v1/invocations", cookie.Value)
		if status != http.StatusOK {
			break
		}
		require.False(t, time.Now().After(deadline), "the other process still takes the signed-out cookie")
		time.Sleep(20 * time.Millisecond)
	}
	require.Equal(t, http.StatusUnauthorized, status, body)
	require.Contains(t, body, "token_revoked")
	select {
	case <-ended:
	case <-time.After(revocationWait):
		t.Fatal("the event stream the signed-out cookie opened on the other process did not end")
	}
}
