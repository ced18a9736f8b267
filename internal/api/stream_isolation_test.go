package api_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app"
	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

// TestStream_HonoursTheSourcesClaim: a token whose sources claim is
// narrower than its session's past sees on the session's stream only the
// invocations of the sources it may use, from the start (?after=0) as
// live; an organization stream of a narrowed user token too.
func TestStream_HonoursTheSourcesClaim(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-sources")
	b.StoreToken("github", "ghp_sources0123456789abcdefghijklmnopqrs", "")

	// Before the narrowed stream opens: a Slack invocation of the session,
	// made with a token of every source.
	r := b.Invoke("send_message", message)
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	slack := r.Body["invocation_id"].(string)

	narrowed := b.Token(auth.Claims{Kind: auth.KindSandbox, SessionID: apptest.Session, Sources: auth.OnlySources("github")})
	session := b.Stream("/v1/sessions/"+apptest.Session+"/events?after=0", narrowed)
	member := b.Token(auth.Claims{Kind: auth.KindUser, Role: auth.RoleMember, Sources: auth.OnlySources("github")})
	org := b.Stream("/v1/events?after=0", member)
	full := b.Stream("/v1/sessions/"+apptest.Session+"/events?after=0", b.Sandbox())

	// Live: another Slack invocation, then a GitHub one.
	r = b.Invoke("send_message", message)
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	r = invokeAs(b, b.Sandbox(), "github", "create_issue", map[string]any{"owner": "octo", "repo": "web", "title": "Deploys hang"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	gh := r.Body["invocation_id"].(string)

	const wait = 10 * time.Second
	require.Equal(t, slack, full.Next(wait).Data["invocation_id"], "the unrestricted token sees Slack's")
	for _, s := range []*apptest.SSE{session, org} {
		ev := s.Next(wait)
		require.Equal(t, gh, ev.Data["invocation_id"], "the Slack invocations are not shown to a token limited to github")
		require.Equal(t, "github", ev.Data["invocation"].(map[string]any)["integration"])
	}
}

// TestStream_OtherOrganizationsCursors: an organization's stream resumed
// from another organization's event id is refused, and from another
// organization's stream position shows only its own events.
func TestStream_OtherOrganizationsCursors(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-cursors")
	org1 := b.Stream("/v1/events", b.Member())
	r := b.Invoke("send_message", message)
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	ev := org1.Next(10 * time.Second)
	eventID := ev.Data["event_id"].(float64)

	other := b.Token(auth.Claims{Org: "org-2", Kind: auth.KindUser, Role: auth.RoleMember})
	e := requireAPIError(t, b.Do("GET", "/v1/events?after="+strconv.FormatInt(int64(eventID), 10), other, nil), http.StatusBadRequest, "invalid_request")
	require.Contains(t, fieldNames(t, e), "after")

	// org-1's position, and everything from the start: org-2 has no event
	// until its own.
	for _, s := range []*apptest.SSE{
		b.Stream("/v1/events", other, "Last-Event-ID", ev.ID),
		b.Stream("/v1/events?after=0", other),
	} {
		sandbox2 := b.Token(auth.Claims{Org: "org-2", Kind: auth.KindSandbox, SessionID: apptest.Session})
		r := b.Do("POST", "/v1/sessions/"+apptest.Session+"/actions/invoke", sandbox2,
			map[string]any{"integration": "slack", "action": "send_message", "params": message})
		require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
		got := s.Next(10 * time.Second)
		require.Equal(t, "org-2", got.Data["invocation"].(map[string]any)["organization_id"])
	}
}

// TestStream_ResumesAcrossAPostgresRestart: a stream open while Postgres
// restarts ends or goes on; resumed from its last id it gets every event
// written since, each once, those of the first minutes after the restart
// included.
func TestStream_ResumesAcrossAPostgresRestart(t *testing.T) {
	t.Parallel()
	pg := pgtest.NewPrivate(t)
	b := apptest.Start(t, &apptest.Options{DatabaseURL: pg.URL, Role: app.RoleAPI})
	b.StoreSlackToken("xoxb-restart")
	s := b.Stream("/v1/events", b.Member())
	first := b.Invoke("send_message", message).Body["invocation_id"].(string)
	ev := s.Next(10 * time.Second)
	require.Equal(t, first, ev.Data["invocation_id"])

	require.NoError(t, pg.Stop())
	require.NoError(t, pg.Start())
	var ids []string
	require.Eventually(t, func() bool {
		r := b.Invoke("send_message", message)
		if r.Status != http.StatusAccepted {
			return false
		}
		ids = append(ids, r.Body["invocation_id"].(string))
		return true
	}, 30*time.Second, 100*time.Millisecond)
	r := b.Invoke("send_message", message)
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	ids = append(ids, r.Body["invocation_id"].(string))

	s.Close()
	resumed := b.Stream("/v1/events", b.Member(), "Last-Event-ID", ev.ID)
	for _, id := range ids {
		require.Equal(t, id, resumed.Next(10 * time.Second).Data["invocation_id"])
	}
	last := b.Invoke("send_message", message).Body["invocation_id"].(string)
	require.Equal(t, last, resumed.Next(10 * time.Second).Data["invocation_id"], "nothing repeated")
}
