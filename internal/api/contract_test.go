package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/invocation"
)

// resultEnvelope reads an invocation's result envelope with token and
// requires 200.
func resultEnvelope(t *testing.T, b *apptest.Bundle, path, token string) map[string]any {
	t.Helper()
	r := b.Do("GET", path, token, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	return r.Body
}

// requireEnvelopeShape checks the fields every result envelope has.
func requireEnvelopeShape(t *testing.T, env map[string]any, status, invocationID string) {
	t.Helper()
	require.Equal(t, status, env["status"])
	require.Equal(t, "slack.send_message", env["actionType"])
	require.Equal(t, "R2", env["riskTier"])
	require.Equal(t, map[string]any{"attempted": false, "ok": false}, env["repair"])
	require.Equal(t, map[string]any{"attempted": false, "ok": false}, env["rollback"])
	verification := env["verification"].(map[string]any)
	require.Equal(t, status == "succeeded", verification["ok"])
	require.Equal(t, []any{}, verification["checks"])
	require.Equal(t, invocationID, env["feedback"].(map[string]any)["invocationId"])
	for _, key := range []string{"status", "actionType", "riskTier", "output", "verification", "repair", "rollback", "feedback"} {
		require.Contains(t, env, key)
	}
}

// TestResultEnvelope_EndToEnd fetches the result envelope of a completed, a
// failed, a policy-denied, a pending, a human-denied and a running
// invocation, through every route that serves it.
func TestResultEnvelope_EndToEnd(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-contract-token")
	b.SetModes(map[string]string{"slack:send_message": "allow"})
	sess := "/v1/sessions/" + apptest.Session + "/actions/invocations/"

	t.Run("Completed", func(t *testing.T) {
		r := b.Invoke("send_message", message)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		id := r.Body["invocation"].(map[string]any)["id"].(string)
		require.Equal(t, "R2", r.Body["invocation"].(map[string]any)["risk_tier"])
		require.Equal(t, "write", r.Body["invocation"].(map[string]any)["risk_level"])

		env := resultEnvelope(t, b, "/v1/invocations/"+id+"/result-envelope", b.Owner())
		requireEnvelopeShape(t, env, "succeeded", id)
		require.Equal(t, "1503435956.000247", env["output"].(map[string]any)["ts"], "the provider's answer")
		fb := env["feedback"].(map[string]any)
		require.Equal(t, "completed", fb["invocationStatus"])
		require.Equal(t, "allow", fb["mode"])
		require.Equal(t, "org_default", fb["modeSource"])
		require.Equal(t, "1503435956.000247", fb["providerRef"])
		require.NotContains(t, fb, "reason")

		// The same envelope for every caller that may read the invocation.
		require.Equal(t, env, resultEnvelope(t, b, "/v1/invocations/"+id+"/result-envelope", b.Member()))
		require.Equal(t, env, resultEnvelope(t, b, "/v1/invocations/"+id+"/result-envelope", b.Sandbox()))
		require.Equal(t, env, resultEnvelope(t, b, sess+id+"/result-envelope", b.Sandbox()))
	})

	t.Run("Failed", func(t *testing.T) {
		b.Slack.SetHandler(apptest.SlackError("channel_not_found"))
		defer b.Slack.SetHandler(apptest.SlackOK)
		r := b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "will fail"})
		requireAPIError(t, r, http.StatusBadGateway, "action_failed")
		id := r.Body["invocation"].(map[string]any)["id"].(string)

		env := resultEnvelope(t, b, sess+id+"/result-envelope", b.Sandbox())
		requireEnvelopeShape(t, env, "failed", id)
		require.Equal(t, map[string]any{}, env["output"])
		fb := env["feedback"].(map[string]any)
		require.Equal(t, "failed", fb["invocationStatus"])
		require.Contains(t, fb["error"], "channel_not_found")
		require.Equal(t, float64(1), fb["attempts"])
	})

	t.Run("DeniedByPolicy", func(t *testing.T) {
		b.SetModes(map[string]string{"slack:send_message": "deny"})
		defer b.SetModes(map[string]string{"slack:send_message": "allow"})
		r := b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "not allowed"})
		requireAPIError(t, r, http.StatusForbidden, "action_denied")
		id := r.Body["invocation"].(map[string]any)["id"].(string)

		env := resultEnvelope(t, b, "/v1/invocations/"+id+"/result-envelope", b.Owner())
		requireEnvelopeShape(t, env, "rejected", id)
		require.Equal(t, map[string]any{}, env["output"])
		fb := env["feedback"].(map[string]any)
		require.Equal(t, "denied", fb["invocationStatus"])
		require.Equal(t, "policy", fb["reason"])
		require.Equal(t, "deny", fb["mode"])
	})

	t.Run("QueuedThenDeniedByAHuman", func(t *testing.T) {
		b.SetModes(map[string]string{"slack:send_message": "require_approval"})
		defer b.SetModes(map[string]string{"slack:send_message": "allow"})
		r := b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "ask first"})
		require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
		id := r.Body["invocation_id"].(string)

		env := resultEnvelope(t, b, "/v1/invocations/"+id+"/result-envelope", b.Owner())
		requireEnvelopeShape(t, env, "queued", id)
		require.NotEmpty(t, env["feedback"].(map[string]any)["expiresAt"])

		secret := "xoxb-1234567890-0987654321-abcdefghijklmnopqrstuvwx"
		d := b.Do("POST", "/v1/invocations/"+id+"/deny", b.Owner(), map[string]string{"reason": "not with " + secret})
		require.Equal(t, http.StatusOK, d.Status, string(d.Raw))
		r = b.Do("GET", "/v1/invocations/"+id+"/result-envelope", b.Owner(), nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		require.NotContains(t, string(r.Raw), secret, "text is redacted")
		requireEnvelopeShape(t, r.Body, "rejected", id)
		fb := r.Body["feedback"].(map[string]any)
		require.Equal(t, "human", fb["reason"])
		require.Contains(t, fb["error"], "not with")
		require.NotEmpty(t, fb["decidedBy"])
	})

	t.Run("RunningHasNoResultYet", func(t *testing.T) {
		release := make(chan struct{})
		b.Slack.SetHandler(func(w http.ResponseWriter, r *http.Request) {
			<-release
			apptest.SlackOK(w, r)
		})
		defer b.Slack.SetHandler(apptest.SlackOK)
		posted := postEnvelope(t, b, envelope("contract-running", nil), http.StatusCreated)
		id := posted["action_id"].(string)
		b.WaitStatus(id, invocation.StatusExecuting, 10*time.Second)

		r := b.Do("GET", "/v1/invocations/"+id+"/result-envelope", b.Owner(), nil)
		e := requireAPIError(t, r, http.StatusConflict, "not_finished")
		require.Equal(t, "executing", e["details"].(map[string]any)["invocation_status"])
		view := b.Do("GET", "/v1/envelopes/"+id, b.Service(), nil)
		require.Equal(t, http.StatusOK, view.Status, string(view.Raw))
		require.Nil(t, view.Body["result_envelope"])
		require.Contains(t, view.Body, "result_envelope")

		close(release)
		done := waitEnvelope(t, b, id, "sent", 10*time.Second)
		env := done["result_envelope"].(map[string]any)
		requireEnvelopeShape(t, env, "succeeded", id)
		require.Equal(t, env, resultEnvelope(t, b, "/v1/invocations/"+id+"/result-envelope", b.Owner()),
			"the envelope view carries the same result envelope")
	})

	t.Run("NotFound", func(t *testing.T) {
		r := b.Do("GET", "/v1/invocations/0193a6c0-0000-7000-8000-000000000000/result-envelope", b.Owner(), nil)
		requireAPIError(t, r, http.StatusNotFound, "not_found")
		// A sandbox of another session does not see this session's invocations.
		list := b.Do("GET", sess[:len(sess)-1], b.Sandbox(), nil)
		require.Equal(t, http.StatusOK, list.Status, string(list.Raw))
		id := list.Body["invocations"].([]any)[0].(map[string]any)["id"].(string)
		other := b.Token(auth.Claims{Org: apptest.Org, Kind: auth.KindSandbox, SessionID: "session-other"})
		r = b.Do("GET", "/v1/invocations/"+id+"/result-envelope", other, nil)
		require.Equal(t, http.StatusNotFound, r.Status, string(r.Raw))
		require.False(t, strings.Contains(string(r.Raw), "actionType"))
	})
}

// TestRiskTiers_R3QueuesForAHuman: a destructive connector tool is R3. It
// waits for a human instead of being refused; neither an allow override
// nor a reviewed allow makes it run unattended; a deny override still
// denies; and reclassifying it through the connector's risk policy is how
// an admin lets it run.
func TestRiskTiers_R3QueuesForAHuman(t *testing.T) {
	t.Parallel()
	srv := newMCPServer(t)
	srv.addTool("delete_note", "Delete a note.", noteSchema, &mcpsdk.ToolAnnotations{DestructiveHint: new(true)})
	b := apptest.Start(t, &apptest.Options{ConnectorCacheTTL: time.Millisecond})
	id, source := createConnector(t, b, srv, nil)
	key := source + ":delete_note"
	params := map[string]any{"title": "old"}

	requireQueued := func(modeSource string) string {
		t.Helper()
		r := invokeTool(b, source, "delete_note", params)
		require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
		inv := r.Body["invocation"].(map[string]any)
		require.Equal(t, "pending", inv["status"])
		require.Equal(t, "require_approval", inv["mode"])
		require.Equal(t, modeSource, inv["mode_source"])
		require.Equal(t, "R3", inv["risk_tier"])
		require.Equal(t, "danger", inv["risk_level"])
		return inv["id"].(string)
	}

	// Inferred: queued, not denied; the catalog says so.
	first := requireQueued("inferred_default")
	avail := b.Do("GET", "/v1/sessions/"+apptest.Session+"/actions/available", b.Sandbox(), nil)
	require.Equal(t, http.StatusOK, avail.Status, string(avail.Raw))
	var listed map[string]any
	for _, a := range avail.Body["actions"].([]any) {
		if a.(map[string]any)["action"] == "delete_note" {
			listed = a.(map[string]any)
		}
	}
	require.Equal(t, "R3", listed["risk_tier"])
	require.Equal(t, "require_approval", listed["mode"])

	// An allow override, or a reviewed allow, does not make it auto-execute.
	b.SetModes(map[string]string{key: "allow"})
	requireQueued("risk_tier")
	b.SetModes(map[string]string{})
	r := b.Do("PUT", "/v1/connectors/"+id+"/tools", b.Owner(), map[string]string{"delete_note": "allow"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	requireQueued("risk_tier")
	require.Empty(t, srv.toolCalls(), "nothing ran without a human")
	env := resultEnvelope(t, b, "/v1/invocations/"+first+"/result-envelope", b.Owner())
	require.Equal(t, "queued", env["status"])
	require.Equal(t, "R3", env["riskTier"])

	// A human may run it.
	require.Equal(t, http.StatusOK, b.Do("POST", "/v1/invocations/"+first+"/approve", b.Owner(), map[string]string{"mode": "once"}).Status)
	b.WaitStatus(first, invocation.StatusCompleted, 10*time.Second)
	require.Len(t, srv.toolCalls(), 1)

	// A deny override still denies.
	b.SetModes(map[string]string{key: "deny"})
	r = invokeTool(b, source, "delete_note", params)
	requireAPIError(t, r, http.StatusForbidden, "action_denied")

	// Reclassified as R2 by the connector's risk policy, the reviewed allow
	// runs it at once.
	b.SetModes(map[string]string{})
	r = b.Do("PATCH", "/v1/connectors/"+id, b.Owner(), map[string]any{"risk_policy": map[string]any{"tools": map[string]string{"delete_note": "R2"}}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	r = invokeTool(b, source, "delete_note", params)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, "R2", r.Body["invocation"].(map[string]any)["risk_tier"])
	require.Len(t, srv.toolCalls(), 2)
}
