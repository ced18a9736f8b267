package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/audit"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/worker"
)

// TestSourcesClaim_Audit: a token with a sources claim lists the audit
// entries of its sources only: those that name a source and none outside
// the claim. An admin token narrowed to github lists the GitHub decision,
// credential and action-mode change, not the Slack ones (the Slack
// decision names the invocation id, source, action and intent prefix), nor
// the action modes naming both sources, nor the organization's entries
// (do-not-contact, pause); filters and pages apply within them, and each
// entry it lists still hashes to its hash. A claim of both sources lists
// both but no organization entry; an empty claim lists none. The export,
// the whole chain, stays refused to a claim (403 source_not_allowed,
// naming no entry). Without the claim, listing and export are as before:
// every entry, in the export's shape (no sources field), and the export
// verifies.
func TestSourcesClaim_Audit(t *testing.T) {
	t.Parallel()
	b := sourcesBundle(t, nil) // credentials of both, and the modes of both (org)
	slack, github := pendingOf(t, b, "slack"), pendingOf(t, b, "github")
	for _, id := range []string{slack, github} {
		r := b.Do("POST", "/v1/invocations/"+id+"/approve", b.Admin(), nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	}
	for path, modes := range map[string]map[string]string{
		"/v1/automations/automation-slack/action-modes":  {"slack:send_message": "allow"},
		"/v1/automations/automation-github/action-modes": {"github:create_issue": "deny"},
	} {
		r := b.Do("PUT", path, b.Admin(), modes)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	}
	r := b.Do("PUT", "/v1/do-not-contact", b.Admin(), map[string]any{"patterns": []string{"#general"}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	r = b.Do("POST", "/v1/queues/pause", b.Admin(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))

	// An entry as "action target": the source of a decision.
	const (
		slackDecision  = "invocation.approve slack"
		githubDecision = "invocation.approve github"
		slackCred      = "credential.store slack"
		githubCred     = "credential.store github"
		orgModes       = "action_modes.replace org"
		slackModes     = "action_modes.replace automation/automation-slack"
		githubModes    = "action_modes.replace automation/automation-github"
		doNotContact   = "do_not_contact.replace "
		pause          = "organization.pause"
	)
	list := func(token, query string) []string {
		t.Helper()
		r := b.Do("GET", "/v1/audit?limit=500&"+query, token, nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		var out []string
		for _, e := range r.Body["entries"].([]any) {
			e := e.(map[string]any)
			switch {
			case e["target_id"] == slack:
				out = append(out, slackDecision)
			case e["target_id"] == github:
				out = append(out, githubDecision)
			case e["target_type"] == "organization":
				out = append(out, e["action"].(string))
			default:
				out = append(out, e["action"].(string)+" "+e["target_id"].(string))
			}
		}
		slices.Sort(out)
		return out
	}
	sorted := func(names ...string) []string { slices.Sort(names); return names }

	// Without the claim: every entry, as before.
	every := list(b.Admin(), "")
	for _, n := range []string{slackDecision, githubDecision, slackCred, githubCred, orgModes, slackModes, githubModes, doNotContact, pause} {
		require.Contains(t, every, n)
	}
	require.Len(t, every, 9)
	r = b.Do("GET", "/v1/audit?limit=500", b.Admin(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	for _, e := range r.Body["entries"].([]any) {
		require.NotContains(t, e, "sources", "the listing's entries keep the export's shape")
	}
	r = b.Do("GET", "/v1/audit/export", b.Admin(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.NotContains(t, string(r.Raw), `"sources"`)
	v, err := audit.VerifyExport(bytes.NewReader(r.Raw))
	require.NoError(t, err)
	require.Equal(t, 9, v.Entries)

	narrowed := func(ids ...string) string {
		return b.Token(auth.Claims{Kind: auth.KindUser, Role: auth.RoleAdmin, Sources: auth.OnlySources(ids...)})
	}
	gh := narrowed("github")
	require.Equal(t, sorted(githubDecision, githubCred, githubModes), list(gh, ""))
	require.Equal(t, []string{githubDecision}, list(gh, "action=invocation"))
	require.Empty(t, list(gh, "target_type=credential&target_id=slack"))
	require.Empty(t, list(gh, "action=do_not_contact"))
	require.Equal(t, sorted(slackDecision, githubDecision, slackCred, githubCred, orgModes, slackModes, githubModes),
		list(narrowed("github", "slack"), ""), "both sources: every entry but the organization's")
	require.Equal(t, sorted(slackDecision, slackCred, slackModes), list(narrowed("slack"), ""))
	require.Empty(t, list(narrowed(), ""), `"sources": [] lists none`)

	// Pages of one entry through the narrowed listing: its entries,
	// newest first, each hashing to its hash.
	var seen []string
	cursor := ""
	for range 10 {
		r := b.Do("GET", "/v1/audit?limit=1"+cursor, gh, nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		var page struct {
			Entries    []audit.Entry `json:"entries"`
			NextCursor *string       `json:"next_cursor"`
		}
		require.NoError(t, json.Unmarshal(r.Raw, &page))
		require.Len(t, page.Entries, 1)
		e := page.Entries[0]
		require.Equal(t, e.Hash, audit.Hash(&e), "a listed entry hashes to its hash")
		require.NotEqual(t, slack, e.TargetID)
		seen = append(seen, e.Action)
		if page.NextCursor == nil {
			break
		}
		cursor = "&cursor=" + *page.NextCursor
	}
	require.Equal(t, []string{"action_modes.replace", "invocation.approve", "credential.store"}, seen)

	for _, claim := range []auth.SourceClaim{auth.OnlySources("github"), auth.OnlySources("github", "slack"), auth.OnlySources()} {
		token := b.Token(auth.Claims{Kind: auth.KindUser, Role: auth.RoleAdmin, Sources: claim})
		r := b.Do("GET", "/v1/audit/export", token, nil)
		e := requireAPIError(t, r, http.StatusForbidden, "source_not_allowed")
		require.Contains(t, e["message"], "the audit export is the whole chain, of every source; GET /v1/audit lists the entries of the token's sources")
		requireNoEntry(t, r, slack)
	}
}

// TestSourcesClaim_AuditDeadLetters: a retry or discard of dead letters is
// listed to a token with a sources claim when the claim allows the source
// of every dead letter it touched: a github token lists its own discard,
// not a batch that discarded a Slack dead letter with a GitHub one; a
// token of both sources lists both.
func TestSourcesClaim_AuditDeadLetters(t *testing.T) {
	t.Parallel()
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadGateway) }))
	t.Cleanup(down.Close)
	b := apptest.Start(t, &apptest.Options{
		Worker:    worker.Config{MaxAttempts: 1, RetryBaseDelay: 50 * time.Millisecond},
		SlackFunc: func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadGateway) },
		BaseURLs:  map[string]string{"github": down.URL},
	})
	b.StoreSlackToken("xoxb-sources-audit-dlq")
	b.StoreToken("github", "ghp_sourcesauditdlq0123456789abcdefghijklm", "")
	b.SetModes(map[string]string{"slack:send_message": "allow", "github:create_issue": "allow"})
	dead := func(integration string) string {
		t.Helper()
		var r *apptest.Response
		if integration == "slack" {
			r = invokeAs(b, b.Sandbox(), "slack", "send_message", message)
		} else {
			r = invokeAs(b, b.Sandbox(), "github", "create_issue", map[string]any{"owner": "octo", "repo": "web", "title": "dead"})
		}
		id := r.Body["invocation"].(map[string]any)["id"].(string)
		require.NotNil(t, b.WaitStatus(id, invocation.StatusFailed, 15*time.Second)["dead_lettered_at"])
		return id
	}
	gh := b.Token(auth.Claims{Kind: auth.KindUser, Role: auth.RoleAdmin, Sources: auth.OnlySources("github")})
	both := b.Token(auth.Claims{Kind: auth.KindUser, Role: auth.RoleAdmin, Sources: auth.OnlySources("github", "slack")})

	own := dead("github")
	r := b.Do("POST", "/v1/dead-letters/"+own+"/discard", gh, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	mixed := []string{dead("slack"), dead("github")}
	r = b.Do("POST", "/v1/dead-letters/discard", b.Admin(), map[string]any{"ids": mixed})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))

	discards := func(token string) []string {
		t.Helper()
		r := b.Do("GET", "/v1/audit?action=dead_letter", token, nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		var out []string
		for _, e := range r.Body["entries"].([]any) {
			var ids []string
			for _, id := range e.(map[string]any)["after"].(map[string]any)["ids"].([]any) {
				ids = append(ids, id.(string))
			}
			out = append(out, strings.Join(ids, ","))
		}
		return out
	}
	require.Equal(t, []string{own}, discards(gh))
	require.Equal(t, []string{strings.Join(mixed, ","), own}, discards(both))
	require.Equal(t, []string{strings.Join(mixed, ","), own}, discards(b.Admin()))
}

// TestSourcesClaim_AuditConnector: a token narrowed to a connector lists
// the connector's entries, its grant's creation and the grant's revocation
// by the connector's new secret, and nothing of Slack's.
func TestSourcesClaim_AuditConnector(t *testing.T) {
	t.Parallel()
	srv := newMCPServer(t)
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-sources-audit-connector")
	id, source := createConnector(t, b, srv, map[string]any{"type": "bearer", "secret": "first-secret-value"})
	r := invokeTool(b, source, "create_note", map[string]any{"title": "note"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	g := approveWithGrant(t, b, r.Body["invocation_id"].(string), map[string]any{"count": 5, "minutes": 10})
	r = b.Do("PATCH", "/v1/connectors/"+id, b.Owner(), map[string]any{"auth": map[string]any{"type": "bearer", "secret": "second-secret-value"}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, "credential", listGrant(t, b, g["id"].(string))["revoke_reason"])

	narrowed := b.Token(auth.Claims{Kind: auth.KindUser, Role: auth.RoleAdmin, Sources: auth.OnlySources(source)})
	r = b.Do("GET", "/v1/audit", narrowed, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	var listed []string
	for _, e := range r.Body["entries"].([]any) {
		e := e.(map[string]any)
		listed = append(listed, e["action"].(string))
		require.NotEqual(t, "slack", e["target_id"])
	}
	require.Equal(t, []string{"grant.revoke", "connector.update", "grant.create", "invocation.approve", "connector.create"}, listed)
}

// requireNoEntry requires r to name no audit entry, nor the invocation id.
func requireNoEntry(t *testing.T, r *apptest.Response, id string) {
	t.Helper()
	require.NotContains(t, string(r.Raw), id)
	require.False(t, strings.Contains(string(r.Raw), `"seq"`), string(r.Raw))
	require.Nil(t, r.Body["entries"], string(r.Raw))
}
