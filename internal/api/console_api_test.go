package api_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/invocation"
)

// TestListOrg_Filters filters the activity listing by status, source,
// session, automation and a created_at range, each alone and together,
// with totals that count the filtered set.
func TestListOrg_Filters(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-filters")
	inSession := b.Invoke("send_message", message).Body["invocation_id"].(string)
	other := b.Token(auth.Claims{Kind: auth.KindSandbox, SessionID: "session-2"})
	r := b.Do("POST", "/v1/sessions/session-2/actions/invoke", other, map[string]any{"integration": "slack", "action": "send_message", "params": message})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	inOther := r.Body["invocation_id"].(string)
	fromAutomation := postEnvelope(t, b, envelope("filters-1", map[string]any{"approval": "required"}), http.StatusCreated)["action_id"].(string)
	r = b.Do("POST", "/v1/invocations/"+inOther+"/deny", b.Owner(), map[string]string{"reason": "no"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))

	list := func(query url.Values) ([]string, float64) {
		t.Helper()
		r := b.Do("GET", "/v1/invocations?"+query.Encode(), b.Member(), nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		var ids []string
		for _, inv := range r.Body["invocations"].([]any) {
			ids = append(ids, inv.(map[string]any)["id"].(string))
		}
		return ids, r.Body["total"].(float64)
	}
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	for _, c := range []struct {
		query url.Values
		want  []string
	}{
		{url.Values{}, []string{fromAutomation, inOther, inSession}},
		{url.Values{"session_id": {apptest.Session}}, []string{inSession}},
		{url.Values{"session_id": {"session-2"}, "status": {"denied"}}, []string{inOther}},
		{url.Values{"session_id": {"session-2"}, "status": {"pending"}}, nil},
		{url.Values{"automation_id": {"automation-1"}}, []string{fromAutomation}},
		{url.Values{"origin": {"envelope"}}, []string{fromAutomation}},
		{url.Values{"origin": {"invoke"}}, []string{inOther, inSession}},
		{url.Values{"source": {"slack"}, "status": {"pending"}}, []string{fromAutomation, inSession}},
		{url.Values{"source": {"linear"}}, nil},
		{url.Values{"created_after": {past}, "created_before": {future}}, []string{fromAutomation, inOther, inSession}},
		{url.Values{"created_after": {future}}, nil},
		{url.Values{"created_before": {past}}, nil},
		{url.Values{"limit": {"1"}, "offset": {"1"}}, []string{inOther}},
	} {
		ids, total := list(c.query)
		require.Equal(t, c.want, ids, c.query.Encode())
		if c.query.Get("limit") == "" {
			require.EqualValues(t, len(c.want), total, c.query.Encode())
		} else {
			require.EqualValues(t, 3, total, "the total counts every match, not the page")
		}
	}
}

// TestStats reports queue depth and age by state, the invocations in
// flight and the last hour's outcomes, throughput and failure rate.
func TestStats(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-stats")
	b.SetModes(map[string]string{"slack:send_message": "allow"})
	r := b.Invoke("send_message", message)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	b.Slack.SetHandler(apptest.SlackError("channel_not_found"))
	r = b.Invoke("send_message", map[string]any{"channel": "C0000000001", "text": "fails"})
	require.Equal(t, http.StatusBadGateway, r.Status, string(r.Raw))
	b.SetModes(map[string]string{})
	pending := b.Invoke("send_message", message).Body["invocation_id"].(string)

	r = b.Do("GET", "/v1/stats", b.Admin(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	last := r.Body["last_hour"].(map[string]any)
	ended := last["ended"].(map[string]any)
	require.EqualValues(t, 1, ended["completed"])
	require.EqualValues(t, 1, ended["failed"])
	require.InDelta(t, 0.5, last["failure_rate"], 1e-9)
	require.Greater(t, last["throughput_per_minute"], 0.0)
	var completed, failed float64
	for _, w := range last["buckets"].([]any) {
		completed += w.(map[string]any)["completed"].(float64)
		failed += w.(map[string]any)["failed"].(float64)
	}
	require.Equal(t, []float64{1, 1}, []float64{completed, failed}, "every outcome falls in a window")
	require.Len(t, last["buckets"], 13, "an hour of 5-minute windows, the current one included")

	flight := r.Body["in_flight"].(map[string]any)
	require.EqualValues(t, 1, flight["pending"].(map[string]any)["count"])

	// The queue counts the organization's own invocations: the pending
	// one, with its age by the database clock.
	queue := r.Body["queue"].(map[string]any)
	require.Equal(t, false, queue["paused"])
	st := queue["states"].(map[string]any)["pending"].(map[string]any)
	require.EqualValues(t, 1, st["count"])
	require.GreaterOrEqual(t, st["age_seconds"], 0.0)
	require.NotNil(t, st["oldest_at"])
	require.NotContains(t, r.Body, "queues", "River's queues are the operator's")

	// Another organization sees none of org-1's invocations.
	r = b.Do("GET", "/v1/stats", b.Token(auth.Claims{Org: "org-2", Kind: auth.KindUser, Role: auth.RoleOwner}), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Empty(t, r.Body["last_hour"].(map[string]any)["ended"])
	require.Empty(t, r.Body["in_flight"])
	require.EqualValues(t, 0, r.Body["queue"].(map[string]any)["states"].(map[string]any)["pending"].(map[string]any)["count"])

	// Deciding the pending one moves it out of flight.
	r = b.Do("POST", "/v1/invocations/"+pending+"/deny", b.Owner(), map[string]string{"reason": "no"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	r = b.Do("GET", "/v1/stats", b.Owner(), nil)
	require.Empty(t, r.Body["in_flight"])
	require.EqualValues(t, 1, r.Body["last_hour"].(map[string]any)["ended"].(map[string]any)["denied"])
}

// TestRateBuckets lists the configured buckets with the organization's
// current fill: a bucket used by a call has one token fewer, another
// organization's is still full.
func TestRateBuckets(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-buckets")
	b.SetModes(map[string]string{"slack:send_message": "allow"})
	r := b.Invoke("send_message", message)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	b.WaitStatus(r.Body["invocation"].(map[string]any)["id"].(string), invocation.StatusCompleted, 10*time.Second)

	slackBucket := func(token string) map[string]any {
		t.Helper()
		r := b.Do("GET", "/v1/rate-buckets", token, nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		for _, bk := range r.Body["buckets"].([]any) {
			if bk := bk.(map[string]any); bk["name"] == "slack.minute" {
				return bk
			}
		}
		t.Fatalf("no slack.minute bucket in %s", r.Raw)
		return nil
	}
	bk := slackBucket(b.Admin())
	require.Equal(t, "org", bk["scope"])
	require.EqualValues(t, 10, bk["burst"])
	require.EqualValues(t, 60, bk["rate"])
	require.EqualValues(t, 60, bk["interval_seconds"])
	states := bk["states"].([]any)
	require.Len(t, states, 1)
	tokens := states[0].(map[string]any)["tokens"].(float64)
	require.Less(t, tokens, 10.0, "the call took a token")
	require.GreaterOrEqual(t, tokens, 9.0)
	require.Nil(t, states[0].(map[string]any)["blocked_until"])
	require.EqualValues(t, 0, states[0].(map[string]any)["leases"])

	other := slackBucket(b.Token(auth.Claims{Org: "org-2", Kind: auth.KindUser, Role: auth.RoleAdmin}))
	require.EqualValues(t, 10, other["states"].([]any)[0].(map[string]any)["tokens"], "org-2's bucket is untouched")
}

// TestOrgCatalog serves the catalog with its params schemas to users
// without a session path, as the console renders params from it.
func TestOrgCatalog(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-catalog")
	r := b.Do("GET", "/v1/actions/available", b.Member(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	var found bool
	for _, a := range r.Body["actions"].([]any) {
		a := a.(map[string]any)
		if a["source"] == "slack" && a["action"] == "send_message" {
			found = true
			require.Contains(t, a["params"].(map[string]any)["properties"], "channel")
		}
	}
	require.True(t, found, string(r.Raw))
}

// TestDeny_ReasonIsCountedInCharacters: a reason is at most 2000
// characters, as the console's and Slack's fields count them, whatever
// their bytes: 2000 euro signs (6000 bytes) deny, 2001 do not.
func TestDeny_ReasonIsCountedInCharacters(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-deny-reason")
	r := b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "ask first"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	id := r.Body["invocation_id"].(string)

	r = b.Do("POST", "/v1/invocations/"+id+"/deny", b.Owner(), map[string]string{"reason": strings.Repeat("€", 2001)})
	require.Equal(t, http.StatusBadRequest, r.Status, string(r.Raw))
	require.Equal(t, "pending", b.Invocation(id)["status"])
	reason := strings.Repeat("€", 2000)
	r = b.Do("POST", "/v1/invocations/"+id+"/deny", b.Owner(), map[string]string{"reason": reason})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, "denied", b.Invocation(id)["status"])
	require.Equal(t, reason, b.Invocation(id)["error"])
}
