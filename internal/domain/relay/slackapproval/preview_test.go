package slackapproval_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/relay/slackapproval"
)

// slackWithNames answers conversations.info and users.info as Slack does
// for a token with channels:read and users:read, everything else as
// apptest.SlackOK.
func slackWithNames(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	switch {
	case strings.HasSuffix(r.URL.Path, "/conversations.info"):
		_, _ = io.WriteString(w, `{"ok":true,"channel":{"id":"C0123456789","name":"deploys"}}`)
	case strings.HasSuffix(r.URL.Path, "/users.info"):
		_, _ = io.WriteString(w, `{"ok":true,"user":{"id":"U0ADA","name":"ada","profile":{"display_name":"Ada"}}}`)
	default:
		apptest.SlackOK(w, r)
	}
}

// blocksOf returns the JSON of a Slack call's blocks.
func blocksOf(r apptest.SlackRequest) string {
	raw, _ := json.Marshal(r.Body["blocks"])
	return string(raw)
}

// TestSlack_ApprovalMessageShowsThePreview: the preview job renders the
// message with the channel's and the mention's names, GET
// /v1/invocations/{id} carries it, and the approval message shows it
// above the raw params (posted with it, or updated once it is ready).
func TestSlack_ApprovalMessageShowsThePreview(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{Slack: slackapproval.Config{Channel: "C0APPROVALS", SigningSecret: secret}, SlackFunc: slackWithNames})
	b.StoreSlackToken("xoxb-approvals")
	r := b.Invoke("send_message", map[string]any{"channel": "C0123456789", "text": "deployed, thanks <@U0ADA>"})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	id := r.Body["invocation_id"].(string)

	var pv map[string]any
	require.Eventually(t, func() bool {
		pv, _ = b.Invocation(id)["preview"].(map[string]any)
		return pv != nil
	}, 15*time.Second, 50*time.Millisecond)
	require.Equal(t, "rendered", pv["status"], pv)
	p := pv["preview"].(map[string]any)
	require.Equal(t, "message", p["kind"])
	require.Equal(t, "Message to #deploys", p["title"])
	require.Equal(t, "deployed, thanks @Ada", p["text"])
	require.Equal(t, "pending", b.Invocation(id)["status"], "rendering decides nothing")

	// The message Slack shows last (the post, or the update after it)
	// has the preview above the params, and still its buttons.
	require.Eventually(t, func() bool {
		var last apptest.SlackRequest
		for _, c := range b.Slack.Requests() {
			if (c.Path == "/chat.postMessage" && c.Body["blocks"] != nil) || c.Path == "/chat.update" {
				last = c
			}
		}
		s := blocksOf(last)
		return strings.Contains(s, "Preview: Message to #deploys") && strings.Contains(s, `"actions"`) &&
			strings.Index(s, "Preview: Message") < strings.Index(s, "*Params*")
	}, 15*time.Second, 50*time.Millisecond)
	require.Len(t, slackCalls(b, "/chat.postMessage"), 1, "one approval message")
}

// TestSlack_PreviewThatFailsLeavesTheParamsAndANote: a rendering Slack
// refuses is stored as failed with a note; the card keeps the raw params.
func TestSlack_PreviewThatFailsLeavesTheParamsAndANote(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, &apptest.Options{Slack: slackapproval.Config{Channel: "C0APPROVALS", SigningSecret: secret},
		SlackFunc: func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/conversations.info") {
				apptest.SlackError("account_inactive")(w, r)
				return
			}
			apptest.SlackOK(w, r)
		}})
	b.StoreSlackToken("xoxb-approvals")
	r := b.Invoke("send_message", message)
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	id := r.Body["invocation_id"].(string)

	var pv map[string]any
	require.Eventually(t, func() bool {
		pv, _ = b.Invocation(id)["preview"].(map[string]any)
		return pv != nil
	}, 15*time.Second, 50*time.Millisecond)
	require.Equal(t, "failed", pv["status"])
	require.Nil(t, pv["preview"])
	require.Contains(t, pv["note"], "account_inactive")
	require.NotContains(t, pv["note"], "xoxb-approvals")
	require.Eventually(t, func() bool {
		var last apptest.SlackRequest
		for _, c := range b.Slack.Requests() {
			if (c.Path == "/chat.postMessage" && c.Body["blocks"] != nil) || c.Path == "/chat.update" {
				last = c
			}
		}
		s := blocksOf(last)
		return strings.Contains(s, "Preview unavailable") && strings.Contains(s, "deploy finished")
	}, 15*time.Second, 50*time.Millisecond)
}
