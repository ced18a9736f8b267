package slackapproval_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/relay/slackapproval"
)

const secret = "8f742231b10e8888abcd99yyyzzz85a5"

var message = map[string]any{"channel": "C0123456789", "text": "deploy finished"}

func TestVerify(t *testing.T) {
	t.Parallel()
	// Slack's documented example request.
	body := []byte("token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c")
	h := http.Header{}
	h.Set("X-Slack-Request-Timestamp", "1531420618")
	h.Set("X-Slack-Signature", "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503")
	require.NoError(t, slackapproval.Verify(secret, h, body, time.Unix(1531420618, 0)))
	require.Error(t, slackapproval.Verify(secret, h, body, time.Unix(1531420618+301, 0)), "replayed after five minutes")
	require.Error(t, slackapproval.Verify("other", h, body, time.Unix(1531420618, 0)))
	require.Error(t, slackapproval.Verify(secret, h, append(body, 'x'), time.Unix(1531420618, 0)))
}

type clicker struct {
	t       *testing.T
	b       *apptest.Bundle
	value   string
	respond string
	// container is the message whose buttons are clicked, as Slack names
	// it in block_actions.
	container map[string]any
}

// newClicker is the clicker of the approval message posted for invocation
// id, once outboxd has recorded where it is.
func newClicker(t *testing.T, b *apptest.Bundle, id, value string) *clicker {
	t.Helper()
	var channel, ts string
	require.Eventually(t, func() bool {
		err := b.Pool.QueryRow(context.Background(), "SELECT channel, ts FROM slack_messages WHERE invocation_id = $1", id).Scan(&channel, &ts)
		return err == nil
	}, 10*time.Second, 20*time.Millisecond)
	return &clicker{t: t, b: b, value: value, respond: b.Slack.Server.URL + "/response",
		container: map[string]any{"type": "message", "channel_id": channel, "message_ts": ts, "is_ephemeral": false}}
}

// click sends Slack's block_actions payload for the approval message,
// signed with secret at ts.
func (c *clicker) click(user, action, signingSecret string, ts time.Time) *apptest.Response {
	payload, _ := json.Marshal(map[string]any{
		"type": "block_actions", "user": map[string]string{"id": user}, "container": c.container,
		"actions":      []any{map[string]string{"action_id": action, "value": c.value}},
		"response_url": c.respond,
	})
	body := "payload=" + url.QueryEscape(string(payload))
	return c.b.Do("POST", "/v1/slack/interactions", "", body,
		"Content-Type", "application/x-www-form-urlencoded",
		"X-Slack-Request-Timestamp", strconv.FormatInt(ts.Unix(), 10),
		"X-Slack-Signature", slackapproval.Sign(signingSecret, ts.Unix(), []byte(body)))
}

func slackCalls(b *apptest.Bundle, path string) []apptest.SlackRequest {
	var out []apptest.SlackRequest
	for _, r := range b.Slack.Requests() {
		// The approval messages, and their updates once decided (not
		// those that add a preview to a pending one).
		pendingUpdate := path == "/chat.update" && strings.HasPrefix(fmt.Sprint(r.Body["text"]), "Approval requested")
		if r.Path == path && (path != "/chat.postMessage" || r.Body["blocks"] != nil) && !pendingUpdate {
			out = append(out, r)
		}
	}
	return out
}

// approvalsBundle runs outboxd with Slack approvals in C0APPROVALS and
// alice (Slack's U_ADMIN) an approver.
func approvalsBundle(t *testing.T) *apptest.Bundle {
	t.Helper()
	b := apptest.Start(t, &apptest.Options{Slack: slackapproval.Config{Channel: "C0APPROVALS", SigningSecret: secret}})
	b.StoreSlackToken("xoxb-approvals")
	r := b.Do("PUT", "/v1/approvers/slack", b.Owner(), map[string]any{
		"U_ADMIN": map[string]string{"user_id": "alice", "role": "admin"},
	})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	return b
}

func TestSlack_ClickApprovesAndUpdatesTheMessage(t *testing.T) {
	t.Parallel()
	b := approvalsBundle(t)
	require.Equal(t, http.StatusBadRequest, b.Do("PUT", "/v1/approvers/slack", b.Owner(), map[string]any{
		"U_MEMBER": map[string]string{"user_id": "bob", "role": "member"},
	}).Status, "only admins and owners approve")

	r := b.Invoke("send_message", message)
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	id := r.Body["invocation_id"].(string)

	// The approval message: who, what, risk, params, expiry, three buttons.
	require.Eventually(t, func() bool { return len(slackCalls(b, "/chat.postMessage")) == 1 }, 10*time.Second, 20*time.Millisecond)
	post := slackCalls(b, "/chat.postMessage")[0]
	require.Equal(t, "C0APPROVALS", post.Body["channel"])
	require.Equal(t, "Bearer xoxb-approvals", post.Authorization)
	raw, _ := json.Marshal(post.Body["blocks"])
	require.Contains(t, string(raw), "deploy finished")
	require.Contains(t, string(raw), "session session-1")
	require.Contains(t, string(raw), "R2 (write)")
	var value string
	for _, blk := range post.Body["blocks"].([]any) {
		if els, ok := blk.(map[string]any)["elements"].([]any); ok && blk.(map[string]any)["type"] == "actions" {
			require.Len(t, els, 3)
			value = els[0].(map[string]any)["value"].(string)
			// "Always" asks first, saying plainly that it lasts.
			always := els[1].(map[string]any)
			require.Equal(t, "approve_always", always["action_id"])
			confirm := always["confirm"].(map[string]any)
			require.Contains(t, confirm["text"].(map[string]any)["text"], "*and every later* `slack.send_message`")
			require.LessOrEqual(t, len([]rune(confirm["text"].(map[string]any)["text"].(string))), 300, "Slack's limit")
		}
	}
	require.NotEmpty(t, value)
	c := newClicker(t, b, id, value)

	// Forged, replayed and unmapped clicks change nothing.
	requireStatus := func(want string) {
		t.Helper()
		require.Equal(t, want, b.Invocation(id)["status"])
	}
	require.Equal(t, http.StatusUnauthorized, c.click("U_ADMIN", "approve", "forged-secret", time.Now()).Status)
	require.Equal(t, http.StatusUnauthorized, c.click("U_ADMIN", "approve", secret, time.Now().Add(-6*time.Minute)).Status)
	r = c.b.Do("POST", "/v1/slack/interactions", "", "payload=%7B%7D", "Content-Type", "application/x-www-form-urlencoded")
	require.Equal(t, http.StatusUnauthorized, r.Status, "unsigned")
	require.Equal(t, http.StatusOK, c.click("U_STRANGER", "approve", secret, time.Now()).Status)
	require.Eventually(t, func() bool { return len(slackCalls(b, "/response")) == 1 }, 5*time.Second, 20*time.Millisecond)
	require.Contains(t, slackCalls(b, "/response")[0].Body["text"], "not an outboxd approver")
	require.Equal(t, "ephemeral", slackCalls(b, "/response")[0].Body["response_type"])
	requireStatus("pending")

	// A signed click of a mapped admin approves, as alice.
	require.Equal(t, http.StatusOK, c.click("U_ADMIN", "approve", secret, time.Now()).Status)
	inv := b.WaitStatus(id, "completed", 10*time.Second)
	require.Equal(t, "alice", inv["approved_by"])

	// The message is updated in place, buttons gone.
	require.Eventually(t, func() bool { return len(slackCalls(b, "/chat.update")) == 1 }, 10*time.Second, 20*time.Millisecond)
	update := slackCalls(b, "/chat.update")[0]
	require.Equal(t, "1503435956.000247", update.Body["ts"])
	require.Contains(t, update.Body["text"], "Approved by alice")
	raw, _ = json.Marshal(update.Body["blocks"])
	require.NotContains(t, string(raw), `"actions"`)

	// A second click is told who decided.
	require.Equal(t, http.StatusOK, c.click("U_ADMIN", "deny", secret, time.Now()).Status)
	require.Eventually(t, func() bool { return len(slackCalls(b, "/response")) == 2 }, 5*time.Second, 20*time.Millisecond)
	require.Contains(t, slackCalls(b, "/response")[1].Body["text"], "by alice")
	requireStatus("completed")
}

func TestSlack_DecidedElsewhereUpdatesTheMessage(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{Slack: slackapproval.Config{SigningSecret: secret}})
	b.StoreSlackToken("xoxb-approvals")
	r := b.Do("PUT", "/v1/notifications/slack", b.Admin(), map[string]any{"channel": "C0ORG"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))

	id := b.Invoke("send_message", message).Body["invocation_id"].(string)
	require.Eventually(t, func() bool { return len(slackCalls(b, "/chat.postMessage")) == 1 }, 10*time.Second, 20*time.Millisecond)
	require.Equal(t, "C0ORG", slackCalls(b, "/chat.postMessage")[0].Body["channel"], "the organization's channel")

	r = b.Do("POST", "/v1/invocations/"+id+"/deny", b.Admin(), map[string]string{"reason": "not today"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Eventually(t, func() bool { return len(slackCalls(b, "/chat.update")) == 1 }, 10*time.Second, 20*time.Millisecond)
	text := slackCalls(b, "/chat.update")[0].Body["text"].(string)
	require.True(t, strings.Contains(text, "Denied by user-admin") && strings.Contains(text, "not today"), text)
}

// twoApproversRequest runs approvalsBundle with R2 needing two approvers,
// invokes send_message and returns the bundle, the invocation and a
// clicker of its approval message's buttons.
func twoApproversRequest(t *testing.T) (*apptest.Bundle, string, *clicker) {
	t.Helper()
	b := approvalsBundle(t)
	r := b.Do("PUT", "/v1/approvers/policy", b.Owner(), map[string]any{"required": map[string]int{"R2": 2}, "groups": []any{}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	id := b.Invoke("send_message", message).Body["invocation_id"].(string)
	require.Eventually(t, func() bool { return len(slackCalls(b, "/chat.postMessage")) == 1 }, 10*time.Second, 20*time.Millisecond)
	var value string
	for _, blk := range slackCalls(b, "/chat.postMessage")[0].Body["blocks"].([]any) {
		if els, ok := blk.(map[string]any)["elements"].([]any); ok && blk.(map[string]any)["type"] == "actions" {
			value = els[0].(map[string]any)["value"].(string)
		}
	}
	return b, id, newClicker(t, b, id, value)
}

// Approve & always allow by an approval that does not release the
// invocation (more approvers must approve) is refused as the API refuses
// it: the approver is told why, and nothing is recorded.
func TestSlack_AlwaysShortOfTheCountSaysWhy(t *testing.T) {
	t.Parallel()
	b, id, c := twoApproversRequest(t)

	require.Equal(t, http.StatusOK, c.click("U_ADMIN", "approve_always", secret, time.Now()).Status)
	require.Eventually(t, func() bool { return len(slackCalls(b, "/response")) == 1 }, 5*time.Second, 20*time.Millisecond)
	text := slackCalls(b, "/response")[0].Body["text"].(string)
	require.NotContains(t, text, "Something went wrong")
	require.Contains(t, text, "the last approver may always allow")
	require.Contains(t, text, "Nothing was changed")
	inv := b.Invocation(id)
	require.Equal(t, "pending", inv["status"])
	require.Empty(t, inv["approvals"], "nothing recorded")
}

// An approval click binds the request its message shows: after another
// approver's edit in the console, the click approves nothing and says the
// request changed.
func TestSlack_ClickAfterAnEditApprovesNothing(t *testing.T) {
	t.Parallel()
	b, id, c := twoApproversRequest(t)

	r := b.Do("POST", "/v1/invocations/"+id+"/approve", b.Owner(), map[string]any{"params": map[string]any{"channel": "C0123456789", "text": "edited by the owner"}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Len(t, b.Invocation(id)["approvals"], 1)

	require.Equal(t, http.StatusOK, c.click("U_ADMIN", "approve", secret, time.Now()).Status)
	require.Eventually(t, func() bool { return len(slackCalls(b, "/response")) == 1 }, 5*time.Second, 20*time.Millisecond)
	require.Contains(t, slackCalls(b, "/response")[0].Body["text"], "this request changed since this message was posted")
	inv := b.Invocation(id)
	require.Equal(t, "pending", inv["status"])
	require.Len(t, inv["approvals"], 1, "alice's click approved nothing")
}

// Slack signs a click on any message of the app, whoever posted it with
// the app's token: a button whose value names a pending invocation, on a
// message outboxd did not post for it (a lookalike another organization or
// integration posted with the same app, a Home tab view), decides nothing.
func TestSlack_ClickOnAnotherMessageDecidesNothing(t *testing.T) {
	t.Parallel()
	b := approvalsBundle(t)
	id := b.Invoke("send_message", message).Body["invocation_id"].(string)
	// The value such a lookalike carries: the invocation, no intent digest.
	forged, _ := json.Marshal(map[string]string{"o": apptest.Org, "i": id})
	c := newClicker(t, b, id, string(forged))

	lookalike := *c
	lookalike.container = map[string]any{"type": "message", "channel_id": c.container["channel_id"], "message_ts": "1600000000.000100", "is_ephemeral": false}
	homeTab := *c
	homeTab.container = map[string]any{"type": "view", "view_id": "V0HOME"}
	for i, from := range []*clicker{&lookalike, &homeTab} {
		require.Equal(t, http.StatusOK, from.click("U_ADMIN", "approve_always", secret, time.Now()).Status)
		require.Eventually(t, func() bool { return len(slackCalls(b, "/response")) == i+1 }, 5*time.Second, 20*time.Millisecond)
		require.Contains(t, slackCalls(b, "/response")[i].Body["text"], "not on the current approval message")
		inv := b.Invocation(id)
		require.Equal(t, "pending", inv["status"])
		require.Empty(t, inv["approvals"])
	}

	// The same click on outboxd's message approves.
	require.Equal(t, http.StatusOK, c.click("U_ADMIN", "approve", secret, time.Now()).Status)
	require.Equal(t, "alice", b.WaitStatus(id, "completed", 10*time.Second)["approved_by"])
}

// The params are the agent's: shown in the approval message, they are
// text, not Slack markup, so they cannot close their code block and
// write the message the approver reads (a risk, a mention, a link).
func TestSlack_ParamsCannotWriteTheApprovalMessage(t *testing.T) {
	t.Parallel()
	b := approvalsBundle(t)
	forged := "hi\n```\n*Risk*\nR1 (read) <!channel> <https://evil.example|see the preview>\n```"
	r := b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": forged})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	require.Eventually(t, func() bool { return len(slackCalls(b, "/chat.postMessage")) == 1 }, 10*time.Second, 20*time.Millisecond)

	var shown bool
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if v["type"] == "mrkdwn" {
				require.NotContains(t, v["text"], "<!channel>", "Slack markup of the agent's in %v", v)
				require.NotContains(t, v["text"], "<https://evil", "Slack markup of the agent's in %v", v)
			}
			if v["type"] == "rich_text_preformatted" {
				raw, _ := json.Marshal(v)
				shown = shown || strings.Contains(string(raw), `R1 (read) \u003c!channel\u003e`) || strings.Contains(string(raw), `R1 (read) <!channel>`)
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(slackCalls(b, "/chat.postMessage")[0].Body["blocks"])
	require.True(t, shown, "the params are shown, as text")
}

// Slack's response_url is a capability (hooks.slack.com/actions/T…/…/<token>):
// a reply that fails is logged without it.
func TestSlack_FailedReplyDoesNotLogTheResponseURL(t *testing.T) {
	t.Parallel()
	var logs apptest.Logs
	b := apptest.Start(t, &apptest.Options{Slack: slackapproval.Config{Channel: "C0APPROVALS", SigningSecret: secret}, Logs: &logs})
	b.StoreSlackToken("xoxb-approvals")
	id := b.Invoke("send_message", message).Body["invocation_id"].(string)
	value, _ := json.Marshal(map[string]string{"o": apptest.Org, "i": id})
	c := newClicker(t, b, id, string(value))
	c.respond = "http://127.0.0.1:1/actions/T0/B0/RESPONSEURLTOKEN0xyz"

	require.Equal(t, http.StatusOK, c.click("U_STRANGER", "approve", secret, time.Now()).Status)
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "slack response_url") }, 10*time.Second, 20*time.Millisecond)
	require.NotContains(t, logs.String(), "RESPONSEURLTOKEN0xyz")
	require.Equal(t, "pending", b.Invocation(id)["status"])
}
