package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors/slack/slacktest"
	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/invocation"
	"github.com/outboxd/outboxd/worker"
)

// TestSlack_LostAnswer runs invocations whose first post Slack stores but
// whose answer is lost (a 503), against a loopback Slack that keeps
// messages: the retry completes with the message the first attempt posted,
// or, when the token cannot read history, posts again and says so on the
// credential.
func TestSlack_LostAnswer(t *testing.T) {
	t.Parallel()

	setup := func(t *testing.T, scopes ...string) (*apptest.Bundle, *slacktest.Server) {
		t.Helper()
		fake := slacktest.New(t)
		if scopes != nil {
			fake.SetScopes("xoxb-lost", scopes...)
		}
		lost := true
		fake.AfterPost(func(slacktest.Message) slacktest.Fault {
			if lost {
				lost = false
				return slacktest.Unavailable
			}
			return slacktest.Answer
		})
		b := apptest.Start(t, &apptest.Options{
			BaseURLs: map[string]string{"slack": fake.URL()},
			Worker:   worker.Config{RetryBaseDelay: 50 * time.Millisecond},
		})
		b.StoreSlackToken("xoxb-lost")
		b.SetModes(map[string]string{"slack:send_message": "allow"})
		return b, fake
	}
	enqueue := func(t *testing.T, b *apptest.Bundle) string {
		t.Helper()
		r := b.Do("POST", "/v1/envelopes", b.Service(), map[string]any{
			"external_id": "lost-1",
			"tool":        map[string]string{"source": "slack", "action": "send_message"},
			"args":        message,
		})
		require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
		return r.Body["action_id"].(string)
	}
	credentials := func(t *testing.T, b *apptest.Bundle) []any {
		t.Helper()
		r := b.Do("GET", "/v1/credentials", b.Owner(), nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		return r.Body["credentials"].([]any)
	}

	t.Run("RetryFindsTheMessage", func(t *testing.T) {
		t.Parallel()
		b, fake := setup(t)
		id := enqueue(t, b)

		inv := b.WaitStatus(id, invocation.StatusCompleted, 15*time.Second)
		messages := fake.Messages()
		require.Len(t, messages, 1, "exactly one message")
		require.Equal(t, messages[0].TS, inv["provider_ref"])
		require.Equal(t, true, inv["conflict"])
		require.Len(t, fake.Calls("chat.postMessage"), 1)
		require.NotEmpty(t, fake.Calls("conversations.history"))
		require.NotContains(t, credentials(t, b)[0], "note")

		r := b.Do("GET", "/v1/sessions/"+apptest.Session+"/actions/available", b.Sandbox(), nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		var delivery any
		for _, a := range r.Body["actions"].([]any) {
			if a := a.(map[string]any); a["source"] == "slack" && a["action"] == "send_message" {
				delivery = a["delivery"]
			}
		}
		require.Equal(t, "reconciled", delivery)
	})

	t.Run("MissingScopePostsAgainAndSaysSo", func(t *testing.T) {
		t.Parallel()
		b, fake := setup(t, "chat:write")
		id := enqueue(t, b)

		inv := b.WaitStatus(id, invocation.StatusCompleted, 15*time.Second)
		require.Len(t, fake.Messages(), 2, "today's behaviour: the action does not fail, it posts again")
		require.Equal(t, false, inv["conflict"])
		creds := credentials(t, b)
		require.Len(t, creds, 1)
		require.Equal(t, "reconcile_unavailable: missing channels:history scope", creds[0].(map[string]any)["note"])

		// A credential stored again starts without the note.
		b.StoreSlackToken("xoxb-lost")
		require.NotContains(t, credentials(t, b)[0], "note")
	})
}
