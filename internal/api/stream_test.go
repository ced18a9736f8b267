package api_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/api"
	"github.com/outboxd/outboxd/internal/app"
	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/invocation"
)

// TestStream_AcrossProcesses runs the API and the worker as separate
// processes on one database: a sandbox's session stream and a member's
// organization stream see an invocation's request, its approval and its
// completion; a client that reconnects with Last-Event-ID gets exactly the
// events it missed.
func TestStream_AcrossProcesses(t *testing.T) {
	t.Parallel()
	api := apptest.Start(t, &apptest.Options{Role: app.RoleAPI})
	wrk := apptest.Start(t, &apptest.Options{Role: app.RoleWorker, DatabaseURL: api.DBURL, SecretsKey: api.Config.SecretsKey})
	api.StoreSlackToken("xoxb-stream")

	const wait = 10 * time.Second
	session := api.Stream("/v1/sessions/"+apptest.Session+"/events", api.Sandbox())
	org := api.Stream("/v1/events", api.Member())

	r := api.Invoke("send_message", message)
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	id := r.Body["invocation_id"].(string)
	r = api.Do("POST", "/v1/invocations/"+id+"/approve", api.Admin(), map[string]string{"mode": "once"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))

	var last string
	for _, s := range []*apptest.SSE{session, org} {
		ev := s.Next(wait)
		require.Equal(t, "action_approval_request", ev.Event)
		require.Equal(t, id, ev.Data["invocation_id"])
		require.Equal(t, "pending", ev.Data["status"])
		require.Equal(t, "require_approval", ev.Data["mode"])
		require.Equal(t, "deploy finished", ev.Data["invocation"].(map[string]any)["params"].(map[string]any)["text"])

		ev = s.Next(wait)
		require.Equal(t, "action_approval_result", ev.Event)
		require.Equal(t, "approved", ev.Data["status"])
		require.Equal(t, "user-admin", ev.Data["decided_by"])

		ev = s.Next(wait)
		require.Equal(t, "action_completed", ev.Event, "executed by the worker process")
		require.Equal(t, "completed", ev.Data["status"])
		require.Equal(t, true, ev.Data["success"])
		last = ev.ID
	}
	require.Len(t, wrk.Slack.Requests(), 1)

	// Away: a denied invocation and a cancelled envelope of another session.
	org.Close()
	require.True(t, org.Ended(wait))
	r = api.Invoke("send_message", message)
	denied := r.Body["invocation_id"].(string)
	r = api.Do("POST", "/v1/invocations/"+denied+"/deny", api.Admin(), map[string]string{"reason": "not now"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	env := postEnvelope(t, api, envelope("stream-away", map[string]any{"approval": "required"}), http.StatusCreated)["action_id"].(string)
	require.Equal(t, http.StatusOK, api.Do("DELETE", "/v1/envelopes/"+env, api.Service(), nil).Status)

	resumed := api.Stream("/v1/events?after=1", api.Member(), "Last-Event-ID", last)
	want := []struct{ event, id, status string }{
		{"action_approval_request", denied, "pending"},
		{"action_approval_result", denied, "denied"},
		{"action_approval_request", env, "pending"},
		{"action_completed", env, "cancelled"},
	}
	for _, w := range want {
		ev := resumed.Next(wait)
		require.Equal(t, w.event, ev.Event)
		require.Equal(t, w.id, ev.Data["invocation_id"])
		require.Equal(t, w.status, ev.Data["status"])
		if w.status == "denied" {
			require.Equal(t, "not now", ev.Data["reason"])
		}
	}
	// The next event is new: nothing was repeated.
	r = api.Invoke("send_message", message)
	next := resumed.Next(wait)
	require.Equal(t, r.Body["invocation_id"], next.Data["invocation_id"])
	require.Equal(t, "action_approval_request", next.Event)

	// The session stream never saw the envelope (another session); its
	// next event is the same new request.
	ev := session.Next(wait)
	require.Equal(t, denied, ev.Data["invocation_id"])

	// Of the two processes only the API LISTENs for announcements: a
	// worker takes no request that waits, and a listening backend wakes
	// for every notification in the database.
	var listeners int
	require.NoError(t, api.Pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND query LIKE 'LISTEN `+invocation.EventsChannel+`%'`).Scan(&listeners))
	require.Equal(t, 1, listeners)
}

func TestStream_Filters(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-stream")

	completed := b.Stream("/v1/events?after=0&types=action_completed", b.Owner())
	r := b.Invoke("send_message", message)
	id := r.Body["invocation_id"].(string)
	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/invocations/"+id+"/deny", b.Admin(), map[string]string{}).Status)
	b.SetModes(map[string]string{"slack:send_message": "allow"})
	r = b.Invoke("send_message", message)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	ev := completed.Next(10 * time.Second)
	require.Equal(t, "action_completed", ev.Event, "the request and the denial are filtered out")
	require.Equal(t, r.Body["invocation"].(map[string]any)["id"], ev.Data["invocation_id"])

	for _, c := range []struct{ path, field string }{
		{"/v1/events?types=action_started", "types"},
		{"/v1/events?after=-1", "after"},
		{"/v1/events?after=abc", "after"},
		{"/v1/events?after=999999", "after"},
	} {
		r := b.Do("GET", c.path, b.Owner(), nil)
		e := requireAPIError(t, r, http.StatusBadRequest, "invalid_request")
		require.Contains(t, fieldNames(t, e), c.field, c.path)
	}
	r = b.Do("GET", "/v1/events", b.Owner(), nil, "Last-Event-ID", "x")
	e := requireAPIError(t, r, http.StatusBadRequest, "invalid_request")
	require.Contains(t, fieldNames(t, e), "Last-Event-ID")
}

// TestStream_SlowClientDisconnected: a client that stops reading is
// disconnected once a write to it stalls, and meanwhile another client
// receives everything.
func TestStream_SlowClientDisconnected(t *testing.T) {
	t.Parallel()
	// The fast client must take each write (a page of events, megabytes
	// here) within the timeout too, on a machine busy with the race
	// detector and the other tests: 300 ms once cut it off as well.
	b := apptest.Start(t, &apptest.Options{Streams: api.StreamConfig{WriteTimeout: 2 * time.Second}})
	b.StoreSlackToken("xoxb-stream")

	// A client that sends its request and never reads, with a small
	// receive buffer.
	conn, err := net.Dial("tcp", strings.TrimPrefix(b.URL, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.(*net.TCPConn).SetReadBuffer(4096))
	_, err = fmt.Fprintf(conn, "GET /v1/events?after=0 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", b.Owner())
	require.NoError(t, err)
	require.Eventually(t, func() bool { return streamSubscribers(t, b) == 1 }, 5*time.Second, 10*time.Millisecond)

	// About 6 MB of events: more than the server's socket send buffer
	// takes (tcp_wmem allows up to 4 MB).
	const n = 300
	text := strings.Repeat("x", 20000)
	batch := make([]any, n)
	for i := range batch {
		batch[i] = envelope(fmt.Sprintf("slow-%d", i), map[string]any{"approval": "required", "args": map[string]any{"channel": "C0123456789", "text": text}})
	}
	r := b.Do("POST", "/v1/envelopes/batch", b.Service(), map[string]any{"envelopes": batch})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))

	fast := b.Stream("/v1/events?after=0", b.Owner())
	for i := range n {
		ev := fast.Next(10 * time.Second)
		require.Equal(t, "action_approval_request", ev.Event, i)
	}
	require.Eventually(t, func() bool { return streamSubscribers(t, b) == 1 }, 10*time.Second, 20*time.Millisecond,
		"the stalled client was disconnected; the fast one remains")
}

func streamSubscribers(t *testing.T, b *apptest.Bundle) float64 {
	t.Helper()
	families, err := b.App.Registry.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == "outboxd_event_stream_subscribers" {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}

// TestStream_EndsWhenTheTokenExpires: a stream lasts no longer than its
// token (and the leeway a reconnect would still be let in with); it ends
// saying why, as a revoked token's does.
func TestStream_EndsWhenTheTokenExpires(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{Auth: auth.Config{Leeway: time.Second}}) // auth.leeway reaches the streams
	tok, err := auth.Mint(b.Secret, auth.Claims{Org: apptest.Org, Kind: auth.KindUser, Role: auth.RoleMember,
		RegisteredClaims: jwt.RegisteredClaims{Subject: "member-short"}}, 2*time.Second)
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp := b.Open(ctx, "/v1/events", tok)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err, "the stream outlived its token: %s", body)
	require.Contains(t, string(body), ": token expired\n\n")
	require.Eventually(t, func() bool { return streamSubscribers(t, b) == 0 }, 5*time.Second, 10*time.Millisecond)
}
