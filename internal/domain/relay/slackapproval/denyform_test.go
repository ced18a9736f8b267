package slackapproval_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors/slack/slacktest"
	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/relay/slackapproval"
)

// denyBundle is a bundle whose Slack approvals go to a slacktest Slack
// (which opens views), with alice (U_ADMIN) and bob (U_BOB) mapped admins
// and an approver group of alice alone for Slack's actions.
func denyBundle(t *testing.T) (*apptest.Bundle, *slacktest.Server) {
	t.Helper()
	fake := slacktest.New(t)
	b := apptest.Start(t, &apptest.Options{
		BaseURLs: map[string]string{"slack": fake.URL()},
		Slack:    slackapproval.Config{Channel: "C0APPROVALS", SigningSecret: secret},
	})
	b.StoreSlackToken("xoxb-approvals")
	r := b.Do("PUT", "/v1/approvers/slack", b.Owner(), map[string]any{
		"U_ADMIN": map[string]string{"user_id": "alice", "role": "admin"},
		"U_BOB":   map[string]string{"user_id": "bob", "role": "admin"},
	})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	r = b.Do("PUT", "/v1/approvers/policy", b.Owner(), map[string]any{
		"groups": []any{map[string]any{"name": "leads", "members": []string{"alice"}, "sources": []string{"slack"}}},
	})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	return b, fake
}

// requested invokes and returns the invocation's id and the clicker of
// its approval message.
func requested(t *testing.T, b *apptest.Bundle, fake *slacktest.Server) (string, *clicker) {
	t.Helper()
	before := len(fake.Calls("chat.postMessage"))
	r := b.Invoke("send_message", message)
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	id := r.Body["invocation_id"].(string)
	require.Eventually(t, func() bool { return len(fake.Calls("chat.postMessage")) > before }, 10*time.Second, 20*time.Millisecond)
	var post struct {
		Blocks []struct {
			Elements []struct {
				Value string `json:"value"`
			} `json:"elements"`
		} `json:"blocks"`
	}
	require.NoError(t, json.Unmarshal(fake.Calls("chat.postMessage")[before].Body, &post))
	var value string
	for _, blk := range post.Blocks {
		if len(blk.Elements) > 0 {
			value = blk.Elements[0].Value
		}
	}
	require.Contains(t, value, id)
	return id, newClicker(t, b, id, value)
}

// clickWithTrigger sends a block_actions click carrying trigger.
func (c *clicker) clickWithTrigger(user, action, trigger string) *apptest.Response {
	payload, _ := json.Marshal(map[string]any{
		"type": "block_actions", "user": map[string]string{"id": user}, "trigger_id": trigger, "container": c.container,
		"actions":      []any{map[string]string{"action_id": action, "value": c.value}},
		"response_url": c.respond,
	})
	return c.signed("payload="+url.QueryEscape(string(payload)), secret, time.Now())
}

func (c *clicker) signed(body, signingSecret string, ts time.Time) *apptest.Response {
	return c.b.Do("POST", "/v1/slack/interactions", "", body,
		"Content-Type", "application/x-www-form-urlencoded",
		"X-Slack-Request-Timestamp", strconv.FormatInt(ts.Unix(), 10),
		"X-Slack-Signature", slackapproval.Sign(signingSecret, ts.Unix(), []byte(body)))
}

// submit sends Slack's view_submission of the opened view with reason,
// signed with signingSecret.
func (c *clicker) submit(view slacktest.View, user, reason, signingSecret string) *apptest.Response {
	payload, _ := json.Marshal(map[string]any{
		"type": "view_submission", "user": map[string]string{"id": user}, "trigger_id": "12345.98766.ffff",
		"view": map[string]any{
			"id": view.ID, "type": "modal", "callback_id": view.View["callback_id"], "private_metadata": view.View["private_metadata"],
			"state": map[string]any{"values": map[string]any{"reason": map[string]any{"reason": map[string]any{"type": "plain_text_input", "value": reason}}}},
		},
	})
	return c.signed("payload="+url.QueryEscape(string(payload)), signingSecret, time.Now())
}

func TestSlack_DenyAsksWhyInAModal(t *testing.T) {
	t.Parallel()
	b, fake := denyBundle(t)
	id, c := requested(t, b, fake)
	requireStatus := func(want string) {
		t.Helper()
		require.Equal(t, want, b.Invocation(id)["status"])
	}

	// Deny opens the form, with the click's trigger_id and the bot token;
	// nothing is decided yet.
	const trigger = "12345.98765.abcd2358fdea"
	r := c.clickWithTrigger("U_ADMIN", "deny", trigger)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	views := fake.Views()
	require.Len(t, views, 1)
	require.Equal(t, trigger, views[0].TriggerID)
	require.Equal(t, "Bearer xoxb-approvals", fake.Calls("views.open")[0].Header.Get("Authorization"))
	raw, _ := json.Marshal(views[0].View["blocks"])
	require.Contains(t, string(raw), `"type":"plain_text_input"`)
	require.Contains(t, string(raw), `"max_length":2000`)
	require.Contains(t, views[0].View["private_metadata"], id)
	requireStatus("pending")

	// Forged, unsigned, an unmapped user's and a non-approver's
	// submissions change nothing.
	require.Equal(t, http.StatusUnauthorized, c.submit(views[0], "U_ADMIN", "forged", "forged-secret").Status)
	r = b.Do("POST", "/v1/slack/interactions", "", "payload="+url.QueryEscape(`{"type":"view_submission"}`), "Content-Type", "application/x-www-form-urlencoded")
	require.Equal(t, http.StatusUnauthorized, r.Status, "unsigned")
	r = c.submit(views[0], "U_STRANGER", "nope", secret)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, "update", r.Body["response_action"])
	require.Contains(t, string(r.Raw), "not an outboxd approver")
	r = c.submit(views[0], "U_BOB", "nope", secret)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, "update", r.Body["response_action"])
	require.Contains(t, string(r.Raw), "not in this request's approver group")
	requireStatus("pending")

	// A reason longer than the API takes is Slack's field error.
	r = c.submit(views[0], "U_ADMIN", strings.Repeat("€", 2001), secret)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, "errors", r.Body["response_action"])
	require.Contains(t, r.Body["errors"], "reason")
	requireStatus("pending")

	// The approver's submission denies, as alice, with the reason typed:
	// the agent reads it.
	// Counted in characters, as Slack's field counts them: 2000 of them
	// take more bytes.
	reason := "Not to #general on a Friday; post in #deploys instead. " + strings.Repeat("€", 2000-55)
	r = c.submit(views[0], "U_ADMIN", reason, secret)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Empty(t, r.Raw, "an empty answer closes the modal")
	inv := b.Invocation(id)
	require.Equal(t, "denied", inv["status"])
	require.Equal(t, "alice", inv["approved_by"])
	r = b.Do("GET", "/v1/sessions/"+apptest.Session+"/actions/invocations/"+id, b.Sandbox(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	agent := r.Body["invocation"].(map[string]any)
	require.Equal(t, reason, agent["error"])
	require.Equal(t, "human", agent["denied_reason"])
	// The audit trail names alice, deciding from Slack, as a click does.
	entries := b.AuditEntries("action=invocation.deny")
	require.Len(t, entries, 1)
	actor := entries[0]["actor"].(map[string]any)
	require.Equal(t, "alice", actor["subject"])
	require.Equal(t, "slack", actor["kind"])

	// The message says who denied and why; a second submission is told.
	require.Eventually(t, func() bool {
		for _, m := range fake.Messages() {
			if strings.Contains(m.Text, "Denied by alice: "+reason) {
				return true
			}
		}
		return false
	}, 10*time.Second, 20*time.Millisecond)
	r = c.submit(views[0], "U_ADMIN", "again", secret)
	require.Contains(t, string(r.Raw), "Already denied by alice")
}

func TestSlack_DenyWithoutAFormDeniesAtOnce(t *testing.T) {
	t.Parallel()
	b, fake := denyBundle(t)
	id, c := requested(t, b, fake)

	// Slack refuses the trigger: the click denies with the fixed reason
	// and says so to the approver alone.
	r := c.clickWithTrigger("U_ADMIN", "deny", "not-a-trigger")
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Empty(t, fake.Views())
	inv := b.Invocation(id)
	require.Equal(t, "denied", inv["status"])
	require.Equal(t, "denied in Slack", inv["error"])
	require.Eventually(t, func() bool { return len(slackCalls(b, "/response")) == 1 }, 5*time.Second, 20*time.Millisecond)
	text := slackCalls(b, "/response")[0].Body["text"].(string)
	require.Contains(t, text, "invalid_trigger_id")
	require.Contains(t, text, `denied at once with the reason "denied in Slack"`)

	// A non-approver's Deny opens nothing.
	id2, c2 := requested(t, b, fake)
	require.Equal(t, http.StatusOK, c2.clickWithTrigger("U_STRANGER", "deny", "12345.98765.abcd").Status)
	require.Empty(t, fake.Views())
	require.Equal(t, "pending", b.Invocation(id2)["status"])
}
