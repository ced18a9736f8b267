package api_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
)

// requireUnknown requires r to be the 404 an unknown id gets: the body of
// a GET of unknownPath, but for the id.
func requireUnknown(t *testing.T, b *apptest.Bundle, r *apptest.Response, id, token, unknownPath, unknownID string) {
	t.Helper()
	requireAPIError(t, r, http.StatusNotFound, "not_found")
	unknown := b.Do("GET", unknownPath, token, nil)
	requireAPIError(t, unknown, http.StatusNotFound, "not_found")
	require.Equal(t, strings.ReplaceAll(string(unknown.Raw), unknownID, "ID"), strings.ReplaceAll(string(r.Raw), id, "ID"),
		"an invocation the token may not see answers as an unknown id does")
}

// listedIDs are the ids of a listing's invocations, in order.
func listedIDs(t *testing.T, r *apptest.Response) []string {
	t.Helper()
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	var ids []string
	for _, inv := range r.Body["invocations"].([]any) {
		ids = append(ids, inv.(map[string]any)["id"].(string))
	}
	return ids
}

// TestSourcesClaim_Reads: a session's invocations made with a token of
// every source are read by a token of the session narrowed to github as
// its event stream shows them: the Slack ones are not found by id (with
// the body of an unknown id), nor their timelines, results, nor a cancel
// of them, and the listings leave them out in their pages and their
// total; a user token narrowed likewise on the organization's routes too.
func TestSourcesClaim_Reads(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-sources-reads")
	b.StoreToken("github", "ghp_sourcesreads0123456789abcdefghijklmno", "")
	full := b.Sandbox()
	narrowed := b.Token(auth.Claims{Kind: auth.KindSandbox, SessionID: apptest.Session, Sources: auth.OnlySources("github")})
	member := b.Token(auth.Claims{Kind: auth.KindUser, Role: auth.RoleMember, Sources: auth.OnlySources("github")})

	// Oldest first: slack, github, slack, github, slack.
	var slack, github []string
	for i := range 5 {
		var r *apptest.Response
		if i%2 == 0 {
			r = invokeAs(b, full, "slack", "send_message", message)
		} else {
			r = invokeAs(b, full, "github", "create_issue", map[string]any{"owner": "octo", "repo": "web", "title": "Issue " + strconv.Itoa(i)})
		}
		require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
		id := r.Body["invocation_id"].(string)
		if i%2 == 0 {
			slack = append(slack, id)
		} else {
			github = append(github, id)
		}
	}
	unknownID := uuid.NewString()

	t.Run("ByID", func(t *testing.T) {
		for _, tc := range []struct{ path, token string }{
			{sessionActions + "invocations/", narrowed},
			{"/v1/invocations/", narrowed},
			{"/v1/invocations/", member},
		} {
			for _, suffix := range []string{"", "/events", "/result-envelope"} {
				path := tc.path + slack[0] + suffix
				requireUnknown(t, b, b.Do("GET", path, tc.token, nil), slack[0], tc.token, tc.path+unknownID+suffix, unknownID)
				r := b.Do("GET", tc.path+github[0]+suffix, tc.token, nil)
				require.Equal(t, http.StatusOK, r.Status, "its own source's: %s", r.Raw)
			}
		}
		// The unrestricted token of the session reads the Slack ones.
		require.Equal(t, http.StatusOK, b.Do("GET", sessionActions+"invocations/"+slack[0], full, nil).Status)
	})

	t.Run("SessionListing", func(t *testing.T) {
		require.Equal(t, []string{github[1], github[0]}, listedIDs(t, b.Do("GET", sessionActions+"invocations", narrowed, nil)))
		// Pages of one: each is full, and the last one is past the end.
		for offset, want := range [][]string{{github[1]}, {github[0]}, nil} {
			got := listedIDs(t, b.Do("GET", sessionActions+"invocations?limit=1&offset="+strconv.Itoa(offset), narrowed, nil))
			require.Equal(t, want, got, "offset %d", offset)
		}
		require.Len(t, listedIDs(t, b.Do("GET", sessionActions+"invocations", full, nil)), 5)
	})

	t.Run("OrgListing", func(t *testing.T) {
		r := b.Do("GET", "/v1/invocations?limit=1&offset=1", member, nil)
		require.Equal(t, []string{github[0]}, listedIDs(t, r))
		require.Equal(t, float64(2), r.Body["total"], "the total counts what the token sees")
		r = b.Do("GET", "/v1/invocations?source=slack", member, nil)
		require.Empty(t, listedIDs(t, r))
		require.Equal(t, float64(0), r.Body["total"])
		r = b.Do("GET", "/v1/invocations", b.Member(), nil)
		require.Equal(t, float64(5), r.Body["total"], "a token without the claim sees every source")
		none := b.Token(auth.Claims{Kind: auth.KindUser, Role: auth.RoleMember, Sources: auth.OnlySources()})
		r = b.Do("GET", "/v1/invocations", none, nil)
		require.Empty(t, listedIDs(t, r), `"sources": [] sees nothing`)
		require.Equal(t, float64(0), r.Body["total"])
	})

	t.Run("Cancel", func(t *testing.T) {
		r := b.Do("POST", sessionActions+"invocations/"+slack[2]+"/cancel", narrowed, nil)
		requireUnknown(t, b, r, slack[2], narrowed, sessionActions+"invocations/"+unknownID, unknownID)
		require.Equal(t, "pending", b.Invocation(slack[2])["status"], "nothing changed")
	})

	t.Run("OtherSession", func(t *testing.T) {
		// Another session's invocation answers as an unknown id too.
		other := b.Token(auth.Claims{Kind: auth.KindSandbox, SessionID: "session-sources-other"})
		r := b.Do("GET", "/v1/invocations/"+github[0], other, nil)
		requireUnknown(t, b, r, github[0], other, "/v1/invocations/"+unknownID, unknownID)
	})

	t.Run("Retry", func(t *testing.T) {
		// A key held by an invocation of a source outside the claim is
		// never answered with it: the narrowed token's request with
		// another source is the key reused with other content (422), as
		// an external id of another automation is; with the key's own
		// source, it is refused before the key is looked up (403).
		r := b.Do("POST", sessionActions+"invoke", full, map[string]any{"integration": "slack", "action": "send_message", "params": message},
			"Idempotency-Key", "sources-retry")
		require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
		slackKeyed := r.Body["invocation_id"].(string)
		r = b.Do("POST", sessionActions+"invoke", narrowed, map[string]any{"integration": "github", "action": "create_issue",
			"params": map[string]any{"owner": "octo", "repo": "web", "title": "retry"}}, "Idempotency-Key", "sources-retry")
		requireAPIError(t, r, http.StatusUnprocessableEntity, "idempotency_mismatch")
		require.NotContains(t, string(r.Raw), slackKeyed)
		r = b.Do("POST", sessionActions+"invoke", narrowed, map[string]any{"integration": "slack", "action": "send_message", "params": message},
			"Idempotency-Key", "sources-retry")
		requireAPIError(t, r, http.StatusForbidden, "source_not_allowed")
		require.NotContains(t, string(r.Raw), slackKeyed)
	})
}

// TestSourcesClaim_EnvelopeReads: a service token of the automation
// narrowed to github does not find the automation's Slack envelope
// (GET and DELETE answer as for an unknown id, and nothing is
// cancelled), nor does a user token narrowed likewise.
func TestSourcesClaim_EnvelopeReads(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-sources-envelopes")
	b.StoreToken("github", "ghp_sourcesenvelopes0123456789abcdefghijk", "")
	slack := postEnvelope(t, b, envelope("sources-slack", nil), http.StatusCreated)["action_id"].(string)
	github := postEnvelope(t, b, envelope("sources-github", map[string]any{
		"tool": map[string]any{"source": "github", "action": "create_issue"},
		"args": map[string]any{"owner": "octo", "repo": "web", "title": "envelope"},
	}), http.StatusCreated)["action_id"].(string)
	service := b.Token(auth.Claims{Kind: auth.KindService, AutomationID: "automation-1", Sources: auth.OnlySources("github")})
	member := b.Token(auth.Claims{Kind: auth.KindUser, Role: auth.RoleMember, Sources: auth.OnlySources("github")})
	unknownID := uuid.NewString()

	for _, token := range []string{service, member} {
		requireUnknown(t, b, b.Do("GET", "/v1/envelopes/"+slack, token, nil), slack, token, "/v1/envelopes/"+unknownID, unknownID)
		require.Equal(t, http.StatusOK, b.Do("GET", "/v1/envelopes/"+github, token, nil).Status)
	}
	requireUnknown(t, b, b.Do("DELETE", "/v1/envelopes/"+slack, service, nil), slack, service, "/v1/envelopes/"+unknownID, unknownID)
	require.Equal(t, "pending", b.Invocation(slack)["status"], "nothing cancelled")
	require.Equal(t, http.StatusOK, b.Do("GET", "/v1/envelopes/"+slack, b.Service(), nil).Status, "the unrestricted token finds it")

	// Another automation's envelope answers as an unknown id too.
	other := b.Token(auth.Claims{Kind: auth.KindService, AutomationID: "automation-2"})
	requireUnknown(t, b, b.Do("GET", "/v1/envelopes/"+github, other, nil), github, other, "/v1/envelopes/"+unknownID, unknownID)
}

// TestSourcesClaim_MCPWait: outboxd_wait of a token narrowed to github on
// a Slack invocation of its session (a service token's: of its
// automation's envelopes) is the error of an unknown id.
func TestSourcesClaim_MCPWait(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-sources-wait")
	b.StoreToken("github", "ghp_sourceswait0123456789abcdefghijklmnop", "")
	ctx := context.Background()

	r := invokeAs(b, b.Sandbox(), "slack", "send_message", message)
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	slack := r.Body["invocation_id"].(string)
	r = invokeAs(b, b.Sandbox(), "github", "create_issue", map[string]any{"owner": "octo", "repo": "web", "title": "wait"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	github := r.Body["invocation_id"].(string)
	// Ended, so that waiting on it answers at once.
	require.Equal(t, http.StatusOK, b.Do("POST", sessionActions+"invocations/"+github+"/cancel", b.Sandbox(), nil).Status)
	slackEnvelope := postEnvelope(t, b, envelope("sources-wait", nil), http.StatusCreated)["action_id"].(string)

	wait := func(session *mcp.ClientSession, id string) (*mcp.CallToolResult, error) {
		return session.CallTool(ctx, &mcp.CallToolParams{Name: "outboxd_wait", Arguments: map[string]any{"invocation_id": id}})
	}
	rpcMessage := func(t *testing.T, session *mcp.ClientSession, id string) string {
		t.Helper()
		res, err := wait(session, id)
		var rpcErr *jsonrpc.Error
		require.True(t, errors.As(err, &rpcErr), "%v %+v", err, res)
		require.Equal(t, int64(jsonrpc.CodeInvalidParams), rpcErr.Code)
		return strings.ReplaceAll(rpcErr.Message, id, "ID")
	}
	unknownID := uuid.NewString()

	sandbox := mcpSession(t, b, b.Token(auth.Claims{Kind: auth.KindSandbox, SessionID: apptest.Session, Sources: auth.OnlySources("github")}))
	require.Equal(t, rpcMessage(t, sandbox, unknownID), rpcMessage(t, sandbox, slack), "the Slack invocation is an unknown id")
	res, err := wait(sandbox, github)
	require.NoError(t, err, "its own source's invocation is found")
	require.True(t, res.IsError)
	require.Contains(t, callText(t, res), "cancelled")

	service := mcpSession(t, b, b.Token(auth.Claims{Kind: auth.KindService, AutomationID: "automation-1", Sources: auth.OnlySources("github")}))
	require.Equal(t, rpcMessage(t, service, unknownID), rpcMessage(t, service, slackEnvelope), "the Slack envelope is an unknown id")
}
