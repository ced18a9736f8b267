package api_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/worker"
)

// requireSameAsUnknown requires r, a request about id, to be the 404 the
// same request about unknownID gets, but for the id.
func requireSameAsUnknown(t *testing.T, r, unknown *apptest.Response, id, unknownID string) {
	t.Helper()
	requireAPIError(t, r, http.StatusNotFound, "not_found")
	requireAPIError(t, unknown, http.StatusNotFound, "not_found")
	require.Equal(t, strings.ReplaceAll(string(unknown.Raw), unknownID, "ID"), strings.ReplaceAll(string(r.Raw), id, "ID"),
		"what the token may not see answers as an unknown id does")
}

// sourcesBundle runs outboxd with Slack and GitHub credentials, both
// actions waiting for a human.
func sourcesBundle(t *testing.T, opts *apptest.Options) *apptest.Bundle {
	t.Helper()
	b := apptest.Start(t, opts)
	b.StoreSlackToken("xoxb-sources-decide")
	b.StoreToken("github", "ghp_sourcesdecide0123456789abcdefghijklmn", "")
	b.SetModes(map[string]string{"slack:send_message": "require_approval", "github:create_issue": "require_approval"})
	return b
}

// pendingOf invokes integration's action in the default session and
// requires it to wait for a human.
func pendingOf(t *testing.T, b *apptest.Bundle, integration string) string {
	t.Helper()
	var r *apptest.Response
	if integration == "slack" {
		r = invokeAs(b, b.Sandbox(), "slack", "send_message", message)
	} else {
		r = invokeAs(b, b.Sandbox(), "github", "create_issue", map[string]any{"owner": "octo", "repo": "web", "title": "decide"})
	}
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	require.Equal(t, "pending", r.Body["invocation"].(map[string]any)["status"], string(r.Raw))
	return r.Body["invocation_id"].(string)
}

// eventCount is how many events an invocation's timeline holds.
func eventCount(t *testing.T, b *apptest.Bundle, id string) int {
	t.Helper()
	r := b.Do("GET", "/v1/invocations/"+id+"/events", b.Owner(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	return len(r.Body["events"].([]any))
}

// TestSourcesClaim_Decisions: an admin token narrowed to github decides no
// Slack invocation, on the session's routes or the organization's, with an
// edit, a grant or mode always: each answers as for an unknown id and
// changes nothing (no event, no audit entry, no grant, no allow mode, no
// approval counted). It decides the GitHub ones; an admin token without
// the claim decides the Slack ones.
func TestSourcesClaim_Decisions(t *testing.T) {
	t.Parallel()
	b := sourcesBundle(t, nil)
	narrowed := b.Token(auth.Claims{Kind: auth.KindUser, Role: auth.RoleAdmin, Sources: auth.OnlySources("github")})
	unknownID := uuid.NewString()
	// ApprovalNotCounted first: the later ones approve Slack invocations
	// with mode always and a grant, which let the next ones through.
	t.Run("ApprovalNotCounted", func(t *testing.T) {
		slack := pendingOf(t, b, "slack")
		github := pendingOf(t, b, "github")
		for _, id := range []string{slack, github} {
			tier := b.Invocation(id)["risk_tier"].(string)
			r := b.Do("PUT", "/v1/approvers/policy", b.Owner(), map[string]any{"required": map[string]any{tier: 2}})
			require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		}
		t.Cleanup(func() {
			r := b.Do("PUT", "/v1/approvers/policy", b.Owner(), map[string]any{"required": map[string]any{}})
			require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		})
		r := b.Do("POST", "/v1/invocations/"+slack+"/approve", narrowed, nil)
		requireSameAsUnknown(t, r, b.Do("POST", "/v1/invocations/"+unknownID+"/approve", narrowed, nil), slack, unknownID)
		require.Empty(t, b.Invocation(slack)["approvals"], "no approval recorded")

		// Its own source's: the approval counts, one of two.
		r = b.Do("POST", "/v1/invocations/"+github+"/approve", narrowed, nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		require.Len(t, b.Invocation(github)["approvals"], 1)
	})

	for _, tc := range []struct {
		name, path string
		body       any
	}{
		{"SessionApprove", sessionActions + "invocations/%s/approve", nil},
		{"SessionDeny", sessionActions + "invocations/%s/deny", map[string]any{"reason": "no"}},
		{"Approve", "/v1/invocations/%s/approve", map[string]any{"mode": "once"}},
		{"EditThenApprove", "/v1/invocations/%s/approve", map[string]any{"params": map[string]any{"channel": "C0123456789", "text": "edited"}}},
		{"Deny", "/v1/invocations/%s/deny", map[string]any{"reason": "no"}},
		{"ApproveWithGrant", "/v1/invocations/%s/approve", map[string]any{"mode": "once", "grant": map[string]any{"count": 2, "minutes": 10}}},
		{"ApproveAlways", "/v1/invocations/%s/approve", map[string]any{"mode": "always"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slack := pendingOf(t, b, "slack")
			events := eventCount(t, b, slack)
			grants := b.Do("GET", "/v1/grants", b.Owner(), nil).Raw
			modes := b.Do("GET", "/v1/action-modes", b.Owner(), nil).Raw
			r := b.Do("POST", fmt.Sprintf(tc.path, slack), narrowed, tc.body)
			unknown := b.Do("POST", fmt.Sprintf(tc.path, unknownID), narrowed, tc.body)
			requireSameAsUnknown(t, r, unknown, slack, unknownID)

			inv := b.Invocation(slack)
			require.Equal(t, "pending", inv["status"], "nothing decided")
			require.Equal(t, message, inv["params"], "nothing edited")
			require.Equal(t, events, eventCount(t, b, slack), "no event")
			require.Empty(t, b.AuditEntries("target_id="+slack), "no audit entry")
			require.JSONEq(t, string(grants), string(b.Do("GET", "/v1/grants", b.Owner(), nil).Raw), "no grant")
			require.JSONEq(t, string(modes), string(b.Do("GET", "/v1/action-modes", b.Owner(), nil).Raw), "no allow mode")

			// The token without the claim decides it. (Its grant is
			// revoked, lest it let the next ones through; ApproveAlways,
			// last, lets every later one through.)
			r = b.Do("POST", fmt.Sprintf(tc.path, slack), b.Admin(), tc.body)
			require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
			if g, ok := r.Body["grant"].(map[string]any); ok {
				require.Equal(t, http.StatusOK, b.Do("DELETE", "/v1/grants/"+g["id"].(string), b.Admin(), nil).Status)
			}
		})
	}

	t.Run("OwnSource", func(t *testing.T) {
		for _, path := range []string{sessionActions + "invocations/%s/approve", "/v1/invocations/%s/deny"} {
			github := pendingOf(t, b, "github")
			r := b.Do("POST", fmt.Sprintf(path, github), narrowed, nil)
			require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
			require.NotEqual(t, "pending", r.Body["invocation"].(map[string]any)["status"])
		}
	})
}

// TestSourcesClaim_Grants: an admin token narrowed to github lists only
// the GitHub grants, and revokes no Slack grant (an unknown id's 404; the
// grant stays active and no revocation is audited).
func TestSourcesClaim_Grants(t *testing.T) {
	t.Parallel()
	b := sourcesBundle(t, nil)
	narrowed := b.Token(auth.Claims{Kind: auth.KindUser, Role: auth.RoleAdmin, Sources: auth.OnlySources("github")})
	grantOf := func(integration string) string {
		id := pendingOf(t, b, integration)
		r := b.Do("POST", "/v1/invocations/"+id+"/approve", b.Admin(), map[string]any{"mode": "once", "grant": map[string]any{"count": 2, "minutes": 10}})
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		return r.Body["grant"].(map[string]any)["id"].(string)
	}
	slack, github := grantOf("slack"), grantOf("github")
	grantIDs := func(r *apptest.Response) []string {
		t.Helper()
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		ids := []string{}
		for _, g := range r.Body["grants"].([]any) {
			ids = append(ids, g.(map[string]any)["id"].(string))
		}
		return ids
	}

	require.Equal(t, []string{github}, grantIDs(b.Do("GET", "/v1/grants", narrowed, nil)))
	require.Equal(t, []string{github}, grantIDs(b.Do("GET", "/v1/grants?active=true", narrowed, nil)))
	require.Equal(t, []string{github, slack}, grantIDs(b.Do("GET", "/v1/grants", b.Admin(), nil)))
	none := b.Token(auth.Claims{Kind: auth.KindUser, Role: auth.RoleAdmin, Sources: auth.OnlySources()})
	require.Empty(t, grantIDs(b.Do("GET", "/v1/grants", none, nil)), `"sources": [] sees no grant`)

	unknownID := uuid.NewString()
	r := b.Do("DELETE", "/v1/grants/"+slack, narrowed, nil)
	requireSameAsUnknown(t, r, b.Do("DELETE", "/v1/grants/"+unknownID, narrowed, nil), slack, unknownID)
	require.Equal(t, true, listGrant(t, b, slack)["active"], "the Slack grant is not revoked")
	require.Empty(t, b.AuditEntries("action=grant.revoke"), "no revocation audited")

	r = b.Do("DELETE", "/v1/grants/"+github, narrowed, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, false, listGrant(t, b, github)["active"])
}

// TestSourcesClaim_DeadLetters: an admin token narrowed to github lists
// only the GitHub dead letters (pages full, total counting those), and
// neither retries nor discards a Slack one (an unknown id's not_found,
// alone or in a batch; it stays a dead letter, nothing audited).
func TestSourcesClaim_DeadLetters(t *testing.T) {
	t.Parallel()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadGateway) }))
	t.Cleanup(down.Close)
	b := apptest.Start(t, &apptest.Options{
		Worker:    worker.Config{MaxAttempts: 1, RetryBaseDelay: 50 * time.Millisecond},
		SlackFunc: func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadGateway) },
		BaseURLs:  map[string]string{"github": down.URL},
	})
	b.StoreSlackToken("xoxb-sources-dlq")
	b.StoreToken("github", "ghp_sourcesdlq0123456789abcdefghijklmnopq", "")
	b.SetModes(map[string]string{"slack:send_message": "allow", "github:create_issue": "allow"})

	// Oldest first: slack, github, slack, github.
	var slack, github []string
	for i := range 4 {
		var r *apptest.Response
		if i%2 == 0 {
			r = invokeAs(b, b.Sandbox(), "slack", "send_message", message)
		} else {
			r = invokeAs(b, b.Sandbox(), "github", "create_issue", map[string]any{"owner": "octo", "repo": "web", "title": fmt.Sprint("dead ", i)})
		}
		id := r.Body["invocation"].(map[string]any)["id"].(string) // its failure's answer too
		require.NotNil(t, b.WaitStatus(id, invocation.StatusFailed, 15*time.Second)["dead_lettered_at"])
		if i%2 == 0 {
			slack = append(slack, id)
		} else {
			github = append(github, id)
		}
	}
	narrowed := b.Token(auth.Claims{Kind: auth.KindUser, Role: auth.RoleAdmin, Sources: auth.OnlySources("github")})
	deadIDs := func(r *apptest.Response) []string {
		t.Helper()
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		var ids []string
		for _, inv := range r.Body["dead_letters"].([]any) {
			ids = append(ids, inv.(map[string]any)["id"].(string))
		}
		return ids
	}

	r := b.Do("GET", "/v1/dead-letters", narrowed, nil)
	require.Equal(t, []string{github[1], github[0]}, deadIDs(r))
	require.Equal(t, float64(2), r.Body["total"], "the total counts what the token sees")
	for offset, want := range [][]string{{github[1]}, {github[0]}, nil} {
		require.Equal(t, want, deadIDs(b.Do("GET", fmt.Sprint("/v1/dead-letters?limit=1&offset=", offset), narrowed, nil)), "offset %d", offset)
	}
	require.Equal(t, float64(4), b.Do("GET", "/v1/dead-letters", b.Admin(), nil).Body["total"], "a token without the claim sees every source")

	unknownID := uuid.NewString()
	for _, op := range []string{"retry", "discard"} {
		r := b.Do("POST", "/v1/dead-letters/"+slack[0]+"/"+op, narrowed, nil)
		requireSameAsUnknown(t, r, b.Do("POST", "/v1/dead-letters/"+unknownID+"/"+op, narrowed, nil), slack[0], unknownID)
		r = b.Do("POST", "/v1/dead-letters/"+op, narrowed, map[string]any{"ids": []string{slack[1]}})
		unknown := b.Do("POST", "/v1/dead-letters/"+op, narrowed, map[string]any{"ids": []string{unknownID}})
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		require.Equal(t, strings.ReplaceAll(string(unknown.Raw), unknownID, "ID"), strings.ReplaceAll(string(r.Raw), slack[1], "ID"))
	}
	for _, id := range slack {
		inv := b.Invocation(id)
		require.Equal(t, "failed", inv["status"])
		require.NotNil(t, inv["dead_lettered_at"], "still a dead letter")
		require.Nil(t, inv["discarded_at"])
		require.Equal(t, float64(0), inv["replay_count"])
	}
	require.Empty(t, b.AuditEntries("target_type=dead_letters"), "nothing audited")
	require.Equal(t, float64(4), b.Do("GET", "/v1/dead-letters", b.Admin(), nil).Body["total"])

	// Its own source's dead letters it discards.
	r = b.Do("POST", "/v1/dead-letters/"+github[0]+"/discard", narrowed, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, float64(1), b.Do("GET", "/v1/dead-letters", narrowed, nil).Body["total"])
}
