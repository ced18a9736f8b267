package api_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/platform/httpserver"
)

// TestConnections_UnauthenticatedCapPerAddress: requests without a valid
// token (public routes, missing and invalid tokens) share one bucket per
// address and get 429 with Retry-After past it; requests with a valid token
// are neither counted nor refused.
func TestConnections_UnauthenticatedCapPerAddress(t *testing.T) {
	t.Parallel()
	// A rate so slow that no token comes back during the test.
	b := apptest.Start(t, &apptest.Options{HTTP: &httpserver.Config{UnauthenticatedRate: 0.001, UnauthenticatedBurst: 3}})
	b.Contract = nil // 429 on public routes is the server's, not a route's

	require.Equal(t, http.StatusOK, b.Do("GET", "/healthz", "", nil).Status)
	require.Equal(t, http.StatusUnauthorized, b.Do("GET", "/v1/invocations", "", nil).Status)
	require.Equal(t, http.StatusUnauthorized, b.Do("GET", "/v1/invocations", "not-a-token", nil).Status)
	for i := range 10 {
		r := b.Do("GET", "/v1/invocations", b.Owner(), nil)
		require.Equal(t, http.StatusOK, r.Status, "authenticated request %d: %s", i, r.Raw)
	}
	for _, path := range []string{"/readyz", "/v1/invocations"} {
		r := b.Do("GET", path, "", nil)
		apiErr := requireAPIError(t, r, http.StatusTooManyRequests, "rate_limited")
		require.NotEmpty(t, r.Header.Get("Retry-After"), path)
		require.NotNil(t, apiErr["details"].(map[string]any)["retry_after_seconds"], path)
	}
	r := b.Do("GET", "/v1/invocations", "not-a-token", nil)
	requireAPIError(t, r, http.StatusTooManyRequests, "rate_limited")
	r = b.Do("GET", "/v1/invocations", b.Member(), nil)
	require.Equal(t, http.StatusOK, r.Status, "a valid token still passes: %s", r.Raw)
}

// TestConnections_UnauthenticatedBodyIsNotWaitedFor: a request refused for
// its token is answered and its connection closed at once, however slowly
// its body comes; net/http would otherwise read the rest of the body
// before answering.
func TestConnections_UnauthenticatedBodyIsNotWaitedFor(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{HTTP: &httpserver.Config{ReadTimeout: time.Minute}})
	c, err := net.Dial("tcp", b.URL[len("http://"):])
	require.NoError(t, err)
	defer c.Close()
	_, err = fmt.Fprintf(c, "POST /v1/sessions/%s/actions/invoke HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"integration\":", apptest.Session)
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Second)))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err, "answered before the read timeout")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.True(t, resp.Close, "the connection is not kept")
	_, err = io.ReadAll(resp.Body)
	require.NoError(t, err)
	_, err = br.ReadByte()
	require.ErrorIs(t, err, io.EOF, "the server closed the connection")
}

// TestConnections_SlowBodyIsCutOff: an authenticated invoke whose body
// stalls is cut off at the read timeout and records nothing.
func TestConnections_SlowBodyIsCutOff(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{HTTP: &httpserver.Config{ReadTimeout: 500 * time.Millisecond}})
	c, err := net.Dial("tcp", b.URL[len("http://"):])
	require.NoError(t, err)
	defer c.Close()
	_, err = fmt.Fprintf(c, "POST /v1/sessions/%s/actions/invoke HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"integration\":\"slack\",",
		apptest.Session, b.Sandbox())
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Second)))
	got, err := io.ReadAll(c)
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the connection is still open: %q", got)
	require.NotContains(t, string(got), "200 OK")
	require.Zero(t, invocationTotal(t, b))
}

// timeout is the read and write timeout of the tests whose requests must
// outlive it: long enough for the other requests of the test on a busy
// machine.
const timeout = 3 * time.Second

// TestConnections_StreamOutlivesWriteTimeout: an event stream stays open
// and delivers past the server's write and read timeouts.
func TestConnections_StreamOutlivesWriteTimeout(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{HTTP: &httpserver.Config{WriteTimeout: timeout, ReadTimeout: timeout}})
	b.StoreSlackToken("xoxb-stream")
	s := b.Stream("/v1/sessions/"+apptest.Session+"/events", b.Sandbox())
	defer s.Close()
	time.Sleep(2 * timeout)

	r := b.Invoke("send_message", message)
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	ev := s.Next(10 * time.Second)
	require.Equal(t, "action_approval_request", ev.Event)
	require.Equal(t, r.Body["invocation_id"], ev.Data["invocation_id"])
}

// TestConnections_WaitingInvokeOutlivesWriteTimeout: an allow-mode invoke
// whose provider answers after the write timeout still gets its result in
// the same request (the wait is bounded by sync_wait instead).
func TestConnections_WaitingInvokeOutlivesWriteTimeout(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{
		HTTP: &httpserver.Config{WriteTimeout: timeout, ReadTimeout: timeout},
		SlackFunc: func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(2 * timeout)
			apptest.SlackOK(w, r)
		},
	})
	b.StoreSlackToken("xoxb-wait")
	b.SetModes(map[string]string{"slack:send_message": "allow"})
	r := b.Invoke("send_message", message)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, "completed", r.Body["invocation"].(map[string]any)["status"])
}

// TestConnections_OrganizationShare: the requests one organization has in
// progress (event streams here) are capped at http.max_org_requests: the
// next one, on any route and on /mcp, gets 429 with Retry-After, another
// organization's pass, and one ending makes room.
func TestConnections_OrganizationShare(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{HTTP: &httpserver.Config{MaxOrgRequests: 2, ReadTimeout: 5 * time.Minute, WriteTimeout: 5 * time.Minute}})
	first := b.Stream("/v1/events", b.Member())
	b.Stream("/v1/sessions/"+apptest.Session+"/events", b.Sandbox())

	r := b.Do("GET", "/v1/invocations", b.Owner(), nil)
	apiErr := requireAPIError(t, r, http.StatusTooManyRequests, "rate_limited")
	require.Contains(t, apiErr["message"], "2 requests in progress")
	require.NotEmpty(t, r.Header.Get("Retry-After"))
	status, body, _ := postMCP(t, b, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "2026-07-28", "")
	require.Equal(t, http.StatusTooManyRequests, status, body)

	other := b.Token(auth.Claims{Org: "org-2", Kind: auth.KindUser, Role: auth.RoleOwner})
	r = b.Do("GET", "/v1/invocations", other, nil)
	require.Equal(t, http.StatusOK, r.Status, "another organization's request passes: %s", r.Raw)

	first.Close()
	require.Eventually(t, func() bool { return b.Do("GET", "/v1/invocations", b.Owner(), nil).Status == http.StatusOK },
		10*time.Second, 20*time.Millisecond, "a stream that ended makes room")
}
