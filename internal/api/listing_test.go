package api_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
)

func TestList_SessionAndOrgInbox(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-token")
	sandbox2 := b.Token(auth.Claims{Kind: auth.KindSandbox, SessionID: "session-2"})

	var session1 []string
	for i := range 3 {
		r := b.Invoke("send_message", map[string]any{"channel": "C1", "text": fmt.Sprint("one ", i)})
		require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
		session1 = append(session1, r.Body["invocation_id"].(string))
	}
	r := b.Do("POST", "/v1/sessions/session-2/actions/invoke", sandbox2,
		map[string]any{"integration": "slack", "action": "send_message", "params": map[string]any{"channel": "C2", "text": "two"}})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	session2 := r.Body["invocation_id"].(string)
	// One more in session 1 that is no longer pending.
	denied := b.Invoke("send_message", map[string]any{"channel": "C1", "text": "deny me"}).Body["invocation_id"].(string)
	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/invocations/"+denied+"/deny", b.Owner(), nil).Status)

	ids := func(r *apptest.Response) []string {
		t.Helper()
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		require.Equal(t, "no-store", r.Header.Get("Cache-Control"), "an organization's data is kept by no cache")
		require.Equal(t, "nosniff", r.Header.Get("X-Content-Type-Options"))
		var out []string
		for _, inv := range r.Body["invocations"].([]any) {
			out = append(out, inv.(map[string]any)["id"].(string))
		}
		return out
	}

	t.Run("SessionListsOnlyItsOwn", func(t *testing.T) {
		got := ids(b.Do("GET", "/v1/sessions/"+apptest.Session+"/actions/invocations", b.Sandbox(), nil))
		require.Equal(t, []string{denied, session1[2], session1[1], session1[0]}, got, "newest first")
		require.Equal(t, []string{session2}, ids(b.Do("GET", "/v1/sessions/session-2/actions/invocations", sandbox2, nil)))
		require.Equal(t, []string{session2}, ids(b.Do("GET", "/v1/sessions/session-2/actions/invocations", b.Member(), nil)))
		require.Empty(t, ids(b.Do("GET", "/v1/sessions/session-3/actions/invocations", b.Owner(), nil)))
		require.Equal(t, []string{session1[1]}, ids(b.Do("GET", "/v1/sessions/"+apptest.Session+"/actions/invocations?limit=1&offset=2", b.Sandbox(), nil)))
	})
	t.Run("SandboxCannotReadAnotherSession", func(t *testing.T) {
		requireAPIError(t, b.Do("GET", "/v1/invocations/"+session2, b.Sandbox(), nil), http.StatusNotFound, "not_found")
		requireAPIError(t, b.Do("GET", "/v1/sessions/"+apptest.Session+"/actions/invocations/"+session2, b.Sandbox(), nil), http.StatusNotFound, "not_found")
		requireAPIError(t, b.Do("GET", "/v1/sessions/"+apptest.Session+"/actions/invocations/"+session2, b.Owner(), nil), http.StatusNotFound, "not_found")
		r := b.Do("GET", "/v1/sessions/session-2/actions/invocations/"+session2, sandbox2, nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		require.Equal(t, "session-2", r.Body["invocation"].(map[string]any)["session_id"])
		r = b.Do("GET", "/v1/invocations/"+session2, sandbox2, nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	})
	t.Run("ApproveThroughTheWrongSessionIsNotFound", func(t *testing.T) {
		r := b.Do("POST", "/v1/sessions/"+apptest.Session+"/actions/invocations/"+session2+"/approve", b.Owner(), map[string]string{"mode": "once"})
		requireAPIError(t, r, http.StatusNotFound, "not_found")
		require.Equal(t, "pending", b.Invocation(session2)["status"])
	})
	t.Run("OrgInboxPages", func(t *testing.T) {
		all := b.Do("GET", "/v1/invocations", b.Member(), nil)
		require.Equal(t, float64(5), all.Body["total"])
		require.Len(t, all.Body["invocations"], 5)

		pending := b.Do("GET", "/v1/invocations?status=pending", b.Owner(), nil)
		require.Equal(t, float64(4), pending.Body["total"])
		require.Equal(t, []string{session2, session1[2], session1[1], session1[0]}, ids(pending))

		page := b.Do("GET", "/v1/invocations?status=pending&limit=1&offset=1", b.Owner(), nil)
		require.Equal(t, float64(4), page.Body["total"], "total counts every match, not the page")
		require.Equal(t, []string{session1[2]}, ids(page))

		page = b.Do("GET", "/v1/invocations?status=pending&limit=2&offset=3", b.Owner(), nil)
		require.Equal(t, float64(4), page.Body["total"])
		require.Equal(t, []string{session1[0]}, ids(page))

		page = b.Do("GET", "/v1/invocations?status=pending&offset=10", b.Owner(), nil)
		require.Equal(t, float64(4), page.Body["total"])
		require.Empty(t, page.Body["invocations"])

		deniedOnly := b.Do("GET", "/v1/invocations?status=denied", b.Member(), nil)
		require.Equal(t, float64(1), deniedOnly.Body["total"])
		require.Equal(t, []string{denied}, ids(deniedOnly))
	})
}

func TestAvailable_ListsActionsWithModes(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	path := "/v1/sessions/" + apptest.Session + "/actions/available"
	// The catalog lists integrations the org has a credential for.
	b.StoreSlackToken("xoxb-listing")

	find := func(r *apptest.Response) map[string]any {
		t.Helper()
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		for _, a := range r.Body["actions"].([]any) {
			action := a.(map[string]any)
			if action["source"] == "slack" && action["action"] == "send_message" {
				return action
			}
		}
		t.Fatalf("slack send_message not in %s", r.Raw)
		return nil
	}

	// The catalog lists the sources the org has a credential for.
	b.StoreSlackToken("xoxb-token")
	action := find(b.Do("GET", path, b.Sandbox(), nil))
	require.Equal(t, "require_approval", action["mode"])
	require.Equal(t, "inferred_default", action["mode_source"])
	require.Equal(t, "write", action["risk_level"])
	require.Equal(t, "R2", action["risk_tier"])
	require.NotEmpty(t, action["description"])
	params := action["params"].(map[string]any)
	require.Equal(t, "object", params["type"])
	require.ElementsMatch(t, []any{"channel", "text"}, params["required"])
	require.Contains(t, params["properties"], "channel")
	require.Contains(t, params["properties"], "thread_ts")

	b.SetModes(map[string]string{"slack:send_message": "allow"})
	action = find(b.Do("GET", path, b.Sandbox(), nil))
	require.Equal(t, "allow", action["mode"])
	require.Equal(t, "org_default", action["mode_source"])
	action = find(b.Do("GET", path, b.Member(), nil))
	require.Equal(t, "allow", action["mode"])

	t.Run("AutomationOverride", func(t *testing.T) {
		r := b.Do("PUT", "/v1/automations/automation-9/action-modes", b.Owner(), map[string]string{"slack:send_message": "deny"})
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		sandbox := b.Token(auth.Claims{Kind: auth.KindSandbox, SessionID: apptest.Session, AutomationID: "automation-9"})
		action := find(b.Do("GET", path, sandbox, nil))
		require.Equal(t, "deny", action["mode"])
		require.Equal(t, "automation_override", action["mode_source"])

		r = b.Do("POST", "/v1/sessions/"+apptest.Session+"/actions/invoke", sandbox,
			map[string]any{"integration": "slack", "action": "send_message", "params": message})
		require.Equal(t, http.StatusForbidden, r.Status, string(r.Raw))
		require.Equal(t, "automation_override", r.Body["invocation"].(map[string]any)["mode_source"])
	})
	t.Run("SourcesClaimExcludesSlack", func(t *testing.T) {
		limited := b.Token(auth.Claims{Kind: auth.KindSandbox, SessionID: apptest.Session, Sources: auth.OnlySources("linear")})
		r := b.Do("GET", path, limited, nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		require.Equal(t, []any{}, r.Body["actions"])

		r = b.Do("POST", "/v1/sessions/"+apptest.Session+"/actions/invoke", limited,
			map[string]any{"integration": "slack", "action": "send_message", "params": message})
		requireAPIError(t, r, http.StatusForbidden, "source_not_allowed")

		allowed := b.Token(auth.Claims{Kind: auth.KindSandbox, SessionID: apptest.Session, Sources: auth.OnlySources("linear", "slack")})
		find(b.Do("GET", path, allowed, nil))
	})
	require.Equal(t, 1, invocationTotal(t, b), "only the denied invoke was recorded")
	require.Empty(t, b.Slack.Requests())
}
