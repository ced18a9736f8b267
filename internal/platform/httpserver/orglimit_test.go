package httpserver_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/platform/httpserver"
)

// An organization gets MaxOrgRequests requests in progress, each ended
// once however often its release runs; another organization's are counted
// apart; 0 derives three quarters of MaxConns; nil admits everything.
func TestOrgLimiter(t *testing.T) {
	l := httpserver.NewOrgLimiter(&httpserver.Config{MaxConns: 100, MaxOrgRequests: 2})
	r1, ok := l.Acquire("a")
	require.True(t, ok)
	_, ok = l.Acquire("a")
	require.True(t, ok)
	_, ok = l.Acquire("a")
	require.False(t, ok, "a third of a's")
	_, ok = l.Acquire("b")
	require.True(t, ok, "b is counted apart")
	r1()
	r1()
	_, ok = l.Acquire("a")
	require.True(t, ok, "an ended request makes room")
	_, ok = l.Acquire("a")
	require.False(t, ok, "a release that runs twice ends one request")

	require.Equal(t, 75, httpserver.NewOrgLimiter(&httpserver.Config{MaxConns: 100}).Max())
	var none *httpserver.OrgLimiter
	release, ok := none.Acquire("a")
	require.True(t, ok)
	release()
}
