package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/relay/slackapproval"
	"github.com/outboxd/outboxd/outbox"
)

// events returns an invocation's timeline as the owner reads it.
func timelineOf(t *testing.T, b *apptest.Bundle, id string) []map[string]any {
	t.Helper()
	r := b.Do("GET", "/v1/invocations/"+id+"/events", b.Owner(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	var out []map[string]any
	for _, e := range r.Body["events"].([]any) {
		out = append(out, e.(map[string]any))
	}
	return out
}

func lastEvent(t *testing.T, b *apptest.Bundle, id, typ string) map[string]any {
	t.Helper()
	var found map[string]any
	for _, e := range timelineOf(t, b, id) {
		if e["type"] == typ {
			found = e
		}
	}
	require.NotNil(t, found, "no %s event in the timeline of %s", typ, id)
	return found
}

// waitHeld waits until the organization's pause holds the invocation's
// job (snoozed, not running): a resume then runs it at once.
func waitHeld(t *testing.T, b *apptest.Bundle, id string) {
	t.Helper()
	require.Eventually(t, func() bool {
		return countRows(t, b, `SELECT count(*) FROM river_job j JOIN action_invocations i ON i.job_id = j.id
			WHERE i.id = $1 AND j.state = 'scheduled' AND j.metadata ? 'org_paused_at'`, id) == 1
	}, 15*time.Second, 20*time.Millisecond)
}

// waitPendingAgain waits until an approved invocation is pending again.
func waitPendingAgain(t *testing.T, b *apptest.Bundle, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		inv := b.Invocation(id)
		if inv["status"] == "pending" {
			return inv
		}
		if time.Now().After(deadline) {
			t.Fatalf("invocation %s is not pending again: %v\ntimeline: %v", id, inv, timelineOf(t, b, id))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestIntent_CredentialReplacedAfterApprovalAsksAgain: approve, replace
// the credential with another one before the job runs: no provider call,
// the invocation is pending again with a new approval request that says
// what changed; approving again makes exactly one call, with the new
// credential.
func TestIntent_CredentialReplacedAfterApprovalAsksAgain(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-first-identity")

	r := b.Invoke("send_message", message)
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	id := r.Body["invocation_id"].(string)
	sealed := r.Body["invocation"].(map[string]any)["intent"].(map[string]any)
	digest := sealed["digest"].(string)
	require.Len(t, digest, 64)
	require.Equal(t, digest[:12], sealed["short"])
	require.Nil(t, sealed["approved_digest"])

	// The organization's queue holds the job once approved, while the
	// credential is replaced.
	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/queues/pause", b.Admin(), nil).Status)
	r = b.Do("POST", "/v1/invocations/"+id+"/approve", b.Admin(), map[string]string{"mode": "once"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	approved := r.Body["invocation"].(map[string]any)["intent"].(map[string]any)
	require.Equal(t, digest, approved["approved_digest"], "the approval records the digest it approved")
	require.Equal(t, "intent "+digest[:12], lastEvent(t, b, id, "approved")["reason"], "the timeline names the intent approved")
	waitHeld(t, b, id)
	b.StoreToken("slack", "xoxb-second-identity", "")
	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/queues/resume", b.Admin(), nil).Status)

	again := waitPendingAgain(t, b, id)
	waitJobsSettled(t, b)
	require.Empty(t, b.Slack.Requests(), "no provider call with a credential nobody approved")
	now := again["intent"].(map[string]any)
	require.Equal(t, []any{"credential replaced"}, now["changes"])
	require.Nil(t, now["approved_digest"])
	require.NotEqual(t, digest, now["digest"])
	require.Nil(t, again["approved_by"])
	require.NotNil(t, again["expires_at"])
	require.Equal(t, "pending", jobState(t, b, id), "a new parked job waits for the new approval")
	changed := lastEvent(t, b, id, "intent_changed")
	require.Equal(t, "pending", changed["to_status"])
	require.Contains(t, changed["reason"], "credential replaced")
	require.Contains(t, changed["reason"], digest[:12])
	require.Contains(t, changed["reason"], now["digest"].(string)[:12])
	// The new request is an approval request on the event feed, as a
	// creation in pending is (Slack approvals and webhooks read it).
	require.Equal(t, 1, countRows(t, b, `SELECT count(*) FROM invocation_events WHERE invocation_id = $1
		AND type = 'intent_changed' AND notice = 'action_approval_request'`, id))

	r = b.Do("POST", "/v1/invocations/"+id+"/approve", b.Admin(), map[string]string{"mode": "once"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	b.WaitStatus(id, "completed", 15*time.Second)
	waitJobsSettled(t, b)
	reqs := b.Slack.Requests()
	require.Len(t, reqs, 1, "exactly one call after the second approval")
	require.Equal(t, "Bearer xoxb-second-identity", reqs[0].Authorization)
}

// TestIntent_EditThenApprove: an approver changes the params before
// approving; the provider receives the edited params, and the agent's
// result says so with the diff; the timeline says who changed what.
func TestIntent_EditThenApprove(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-edit")

	r := b.Invoke("send_message", message)
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	id := r.Body["invocation_id"].(string)
	before := r.Body["invocation"].(map[string]any)["intent"].(map[string]any)["digest"].(string)

	// An edit the schema refuses changes nothing.
	r = b.Do("POST", "/v1/invocations/"+id+"/approve", b.Admin(), map[string]any{"params": map[string]any{"channel": 5}})
	requireAPIError(t, r, http.StatusBadRequest, "invalid_request")
	inv := b.Invocation(id)
	require.Equal(t, "pending", inv["status"])
	require.Equal(t, false, inv["edited"])
	require.Equal(t, "deploy finished", inv["params"].(map[string]any)["text"])
	r = b.Do("POST", "/v1/invocations/"+id+"/approve", b.Admin(), map[string]any{"params": "not an object"})
	require.Equal(t, http.StatusBadRequest, r.Status, string(r.Raw))

	edited := map[string]any{"channel": "C0123456789", "text": "deploy finished (checked by ops)"}
	r = b.Do("POST", "/v1/invocations/"+id+"/approve", b.Admin(), map[string]any{"mode": "once", "params": edited})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	answer := r.Body["invocation"].(map[string]any)
	require.Equal(t, true, answer["edited"])
	sealed := answer["intent"].(map[string]any)
	require.NotEqual(t, before, sealed["digest"], "the approved intent is the edited one")
	require.Equal(t, sealed["digest"], sealed["approved_digest"])

	done := b.WaitStatus(id, "completed", 15*time.Second)
	reqs := b.Slack.Requests()
	require.Len(t, reqs, 1)
	require.Equal(t, "deploy finished (checked by ops)", reqs[0].Body["text"], "the provider receives the edited params")

	// What the agent reads: the flag, both versions and the diff.
	r = b.Do("GET", "/v1/invocations/"+id, b.Sandbox(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	agent := r.Body["invocation"].(map[string]any)
	require.Equal(t, true, agent["edited"])
	require.Equal(t, "deploy finished", agent["params_original"].(map[string]any)["text"])
	require.Equal(t, "deploy finished (checked by ops)", agent["params"].(map[string]any)["text"])
	edits := agent["edits"].([]any)
	require.Len(t, edits, 1)
	e := edits[0].(map[string]any)
	require.Equal(t, "user-admin", e["by"])
	require.Equal(t, []any{map[string]any{"path": "/text", "from": "deploy finished", "to": "deploy finished (checked by ops)"}}, e["diff"])
	require.Equal(t, done["intent"].(map[string]any)["digest"], e["digest"])

	ev := lastEvent(t, b, id, "edited")
	require.Equal(t, "user-admin", ev["actor"])
	require.Equal(t, "pending", ev["from_status"])
	require.Contains(t, ev["reason"], "/text")
	require.Contains(t, ev["reason"], sealed["short"])
}

// TestIntent_EditThenApproveOverMCP: an MCP tools/call whose params an
// approver edited returns the provider's result with the flag and the diff.
func TestIntent_EditThenApproveOverMCP(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{Outbox: outbox.Config{SyncWait: 300 * time.Millisecond}})
	b.StoreSlackToken("xoxb-mcp-edit")
	session := mcpSession(t, b, b.Sandbox())
	ctx := context.Background()

	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "slack.send_message", Arguments: message})
	require.NoError(t, err)
	pending := res.StructuredContent.(map[string]any)
	require.Equal(t, "pending", pending["status"])
	id := pending["invocation_id"].(string)
	require.Nil(t, res.Meta["outboxd/edited"], "not edited yet")

	edited := map[string]any{"channel": "C0123456789", "text": "edited over MCP"}
	r := b.Do("POST", "/v1/invocations/"+id+"/approve", b.Owner(), map[string]any{"params": edited})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Eventually(t, func() bool {
		res, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "outboxd_wait", Arguments: map[string]any{"invocation_id": id}})
		require.NoError(t, err)
		return res.StructuredContent != nil && res.StructuredContent.(map[string]any)["ok"] == true
	}, 15*time.Second, 50*time.Millisecond)
	require.False(t, res.IsError)
	require.Equal(t, true, res.Meta["outboxd/edited"])
	edits := res.Meta["outboxd/edits"].([]any)
	require.Len(t, edits, 1)
	diff := edits[0].(map[string]any)["diff"].([]any)
	require.Equal(t, map[string]any{"path": "/text", "from": "deploy finished", "to": "edited over MCP"}, diff[0])
	last := res.Content[len(res.Content)-1].(*mcp.TextContent).Text
	require.Contains(t, last, `"edited":true`)
	require.Contains(t, last, "a human changed your params")
	require.Equal(t, "edited over MCP", b.Slack.Requests()[0].Body["text"])
}

// TestIntent_ToolRedefinedAfterApprovalAsksAgain: approve a connector
// tool's call, redefine the tool before the job runs: no call, a new
// approval request that says the tool was redefined; approving again makes
// exactly one call.
func TestIntent_ToolRedefinedAfterApprovalAsksAgain(t *testing.T) {
	t.Parallel()
	srv := newMCPServer(t)
	b := apptest.Start(t, &apptest.Options{ConnectorCacheTTL: time.Millisecond})
	_, source := createConnector(t, b, srv, nil)

	r := invokeTool(b, source, "create_note", map[string]any{"title": "quarterly"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	id := r.Body["invocation_id"].(string)
	digest := r.Body["invocation"].(map[string]any)["intent"].(map[string]any)["digest"].(string)

	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/queues/pause", b.Admin(), nil).Status)
	r = b.Do("POST", "/v1/invocations/"+id+"/approve", b.Admin(), map[string]string{"mode": "once"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	waitHeld(t, b, id)
	srv.addTool("create_note", "Create a note.",
		`{"type":"object","properties":{"title":{"type":"string"},"share_with":{"type":"string"}},"required":["title"]}`, nil)
	time.Sleep(5 * time.Millisecond) // past the tool-list cache
	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/queues/resume", b.Admin(), nil).Status)

	again := waitPendingAgain(t, b, id)
	waitJobsSettled(t, b)
	require.Empty(t, srv.toolCalls(), "no call of a tool redefined since the approval")
	now := again["intent"].(map[string]any)
	require.Equal(t, []any{"tool redefined"}, now["changes"])
	require.NotEqual(t, digest, now["digest"])
	require.Contains(t, lastEvent(t, b, id, "intent_changed")["reason"], "tool redefined")

	r = b.Do("POST", "/v1/invocations/"+id+"/approve", b.Admin(), map[string]string{"mode": "once"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, now["digest"], r.Body["invocation"].(map[string]any)["intent"].(map[string]any)["approved_digest"])
	b.WaitStatus(id, "completed", 15*time.Second)
	waitJobsSettled(t, b)
	require.Len(t, srv.toolCalls(), 1, "exactly one call after the second approval")
}

// TestIntent_ConnectorMovedAfterApprovalAsksAgain: a connector pointed at
// another server between the approval and the call (with auth "none",
// no credential changes) sends nothing to either server: the intent names
// the server, and the invocation is asked again.
func TestIntent_ConnectorMovedAfterApprovalAsksAgain(t *testing.T) {
	t.Parallel()
	first, second := newMCPServer(t), newMCPServer(t)
	b := apptest.Start(t, nil)
	conn, source := createConnector(t, b, first, nil)

	r := invokeTool(b, source, "create_note", map[string]any{"title": "quarterly"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	id := r.Body["invocation_id"].(string)
	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/queues/pause", b.Admin(), nil).Status)
	r = b.Do("POST", "/v1/invocations/"+id+"/approve", b.Admin(), map[string]string{"mode": "once"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	waitHeld(t, b, id)
	r = b.Do("PATCH", "/v1/connectors/"+conn, b.Owner(), map[string]any{"url": second.URL})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/queues/resume", b.Admin(), nil).Status)

	again := waitPendingAgain(t, b, id)
	waitJobsSettled(t, b)
	require.Empty(t, first.toolCalls())
	require.Empty(t, second.toolCalls(), "no call to a server nobody approved")
	require.Equal(t, []any{"server changed"}, again["intent"].(map[string]any)["changes"])
	require.Contains(t, lastEvent(t, b, id, "intent_changed")["reason"], "server changed")

	r = b.Do("POST", "/v1/invocations/"+id+"/approve", b.Admin(), map[string]string{"mode": "once"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	b.WaitStatus(id, "completed", 15*time.Second)
	require.Empty(t, first.toolCalls())
	require.Len(t, second.toolCalls(), 1, "exactly one call, to the server approved")
}

// TestIntent_ApprovalBindsWhatItsApproverSaw: with two approvers, one
// approver's edit after the other loaded the invocation does not get the
// other's approval: an approval naming the digest it reviewed is refused
// (409, nothing recorded) once the intent is another, and accepted for the
// intent as it is now.
func TestIntent_ApprovalBindsWhatItsApproverSaw(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-two")
	r := b.Invoke("send_message", message)
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	id := r.Body["invocation_id"].(string)
	seen := r.Body["invocation"].(map[string]any)["intent"].(map[string]any)["short"].(string)
	tier := r.Body["invocation"].(map[string]any)["risk_tier"].(string)
	require.Equal(t, http.StatusOK, b.Do("PUT", "/v1/approvers/policy", b.Owner(), map[string]any{"required": map[string]any{tier: 2}}).Status)

	// The owner edits and approves (one of two) while the admin looks at
	// the agent's version.
	edited := map[string]any{"channel": "C0123456789", "text": "deploy finished (edited)"}
	r = b.Do("POST", "/v1/invocations/"+id+"/approve", b.Owner(), map[string]any{"params": edited, "digest": seen})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	now := r.Body["invocation"].(map[string]any)["intent"].(map[string]any)["digest"].(string)
	require.NotEqual(t, seen, now[:12])

	r = b.Do("POST", "/v1/invocations/"+id+"/approve", b.Admin(), map[string]any{"digest": seen})
	requireAPIError(t, r, http.StatusConflict, "conflict")
	require.Contains(t, string(r.Raw), "review it again")
	inv := b.Invocation(id)
	require.Equal(t, "pending", inv["status"], "nothing approved")
	require.Len(t, inv["approvals"], 1)
	require.Empty(t, b.Slack.Requests())

	for _, bad := range []string{"ABCDEF012345", "abc", strings.Repeat("a", 65), "zzzzzzzzzzzz"} {
		r = b.Do("POST", "/v1/invocations/"+id+"/approve", b.Admin(), map[string]any{"digest": bad})
		requireAPIError(t, r, http.StatusBadRequest, "invalid_request")
	}

	r = b.Do("POST", "/v1/invocations/"+id+"/approve", b.Admin(), map[string]any{"digest": now})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	b.WaitStatus(id, "completed", 15*time.Second)
	require.Len(t, b.Slack.Requests(), 1)
}

// TestIntent_SlackAsksAgain: a request asked again is posted to the
// approvals channel anew, saying what changed; both posts show the intent
// digest's first characters.
func TestIntent_SlackAsksAgain(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{Slack: slackapproval.Config{Channel: "C0APPROVALS", SigningSecret: "intents-signing-secret"}})
	b.StoreSlackToken("xoxb-one")
	posts := func() []string {
		var out []string
		for _, r := range b.Slack.Requests() {
			if r.Path == "/chat.postMessage" && r.Body["blocks"] != nil {
				raw, _ := json.Marshal(r.Body["blocks"])
				out = append(out, string(raw))
			}
		}
		return out
	}
	r := b.Invoke("send_message", message)
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	id := r.Body["invocation_id"].(string)
	short := r.Body["invocation"].(map[string]any)["intent"].(map[string]any)["short"].(string)
	require.Eventually(t, func() bool { return len(posts()) == 1 }, 10*time.Second, 20*time.Millisecond)
	require.Contains(t, posts()[0], "Intent `"+short+"`")

	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/queues/pause", b.Admin(), nil).Status)
	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/invocations/"+id+"/approve", b.Admin(), nil).Status)
	waitHeld(t, b, id)
	b.StoreToken("slack", "xoxb-two", "")
	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/queues/resume", b.Admin(), nil).Status)
	again := waitPendingAgain(t, b, id)
	require.Eventually(t, func() bool { return len(posts()) == 2 }, 10*time.Second, 20*time.Millisecond)
	second := posts()[1]
	require.Contains(t, second, "Asked again: credential replaced")
	require.Contains(t, second, again["intent"].(map[string]any)["short"].(string))
}

// TestIntent_EditThenApproveAnEnvelope: an automation reads on its
// envelope that an approver edited its args, both versions and the diff,
// as an agent reads it on its invocation.
func TestIntent_EditThenApproveAnEnvelope(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-envelope-edit")
	env := postEnvelope(t, b, envelope("ext-edit", nil), http.StatusCreated)
	id := env["action_id"].(string)
	require.Equal(t, "required", env["approval"])
	require.Equal(t, false, env["edited"])
	require.Nil(t, env["args_original"])

	edited := map[string]any{"channel": "C0123456789", "text": "envelope ext-edit (checked by ops)"}
	r := b.Do("POST", "/v1/invocations/"+id+"/approve", b.Admin(), map[string]any{"mode": "once", "params": edited})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))

	done := waitEnvelope(t, b, id, "sent", 15*time.Second)
	require.Equal(t, true, done["edited"])
	require.Equal(t, "envelope ext-edit", done["args_original"].(map[string]any)["text"])
	require.Equal(t, "envelope ext-edit (checked by ops)", done["args"].(map[string]any)["text"])
	edits := done["edits"].([]any)
	require.Len(t, edits, 1)
	require.Equal(t, []any{map[string]any{"path": "/text", "from": "envelope ext-edit", "to": "envelope ext-edit (checked by ops)"}},
		edits[0].(map[string]any)["diff"])
}

// TestIntent_EditOfASecretNamesItsPath: an approver who replaces a value
// the redacted params hide (a token in the text) changes what runs; the
// edit's diff names that path, with the redacted values only, instead of
// recording an edit of nothing.
func TestIntent_EditOfASecretNamesItsPath(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-edit-secret")
	const agentToken, approverToken = "xoxb-123456789012-123456789012-abcdefghijABCDEFGHIJabcd", "xoxb-210987654321-210987654321-zyxwvutsrqZYXWVUTSRQzyxw"
	r := b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "use " + agentToken})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	id := r.Body["invocation_id"].(string)
	require.Equal(t, "use [REDACTED]", b.Invocation(id)["params"].(map[string]any)["text"])

	edited := map[string]any{"channel": "C0123456789", "text": "use " + approverToken}
	r = b.Do("POST", "/v1/invocations/"+id+"/approve", b.Admin(), map[string]any{"mode": "once", "params": edited})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.NotContains(t, string(r.Raw), approverToken)
	edits := r.Body["invocation"].(map[string]any)["edits"].([]any)
	require.Len(t, edits, 1)
	require.Equal(t, []any{map[string]any{"path": "/text", "from": "use [REDACTED]", "to": "use [REDACTED]"}},
		edits[0].(map[string]any)["diff"])
	require.Contains(t, lastEvent(t, b, id, "edited")["reason"], "/text")
	b.WaitStatus(id, "completed", 15*time.Second)
}
