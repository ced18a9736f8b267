package slack_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/slack"
	"github.com/outboxd/outboxd/executors/slack/slacktest"
)

func previewSource(t *testing.T) (executors.Previewer, *slacktest.Server) {
	t.Helper()
	fake := slacktest.New(t)
	source, err := slack.New(&slack.Config{BaseURL: fake.URL(), HTTPClient: fake.Client()})
	require.NoError(t, err)
	p, ok := source.(executors.Previewer)
	require.True(t, ok, "the Slack source renders previews")
	return p, fake
}

func TestPreviewSendMessage(t *testing.T) {
	t.Run("channel and mentions resolved", func(t *testing.T) {
		p, fake := previewSource(t)
		fake.AddChannel("C0GENERAL", "general")
		fake.AddUser("U0ALICE", "alice")
		got, err := p.Preview(context.Background(), slack.ActionSendMessage,
			[]byte(`{"channel":"C0GENERAL","text":"hi <@U0ALICE>, see <#C0OTHER|random> <!here>","thread_ts":"1.2"}`), execContext())
		require.NoError(t, err)
		require.Equal(t, executors.PreviewMessage, got.Kind)
		require.Equal(t, "Message to #general (reply in thread)", got.Title)
		require.Equal(t, "hi @alice, see #random @here", got.Text)
		require.Empty(t, got.Notes)
		require.Contains(t, got.Fields, executors.PreviewField{Name: "channel", Value: "#general"})
		require.Len(t, fake.Calls("chat.postMessage"), 0, "a preview posts nothing")
	})
	t.Run("scopes the credential lacks leave ids and say so", func(t *testing.T) {
		p, fake := previewSource(t)
		fake.AddChannel("C0GENERAL", "general")
		fake.AddUser("U0ALICE", "alice")
		fake.SetScopes(testToken, "chat:write")
		got, err := p.Preview(context.Background(), slack.ActionSendMessage,
			[]byte(`{"channel":"C0GENERAL","text":"hi <@U0ALICE> and <@U0ALICE>"}`), execContext())
		require.NoError(t, err)
		require.Equal(t, "Message to C0GENERAL", got.Title)
		require.Equal(t, "hi @U0ALICE and @U0ALICE", got.Text)
		require.Len(t, got.Notes, 2)
		require.Contains(t, got.Notes[0], "channels:read")
		require.Contains(t, got.Notes[1], "users:read")
		require.Len(t, fake.Calls("users.info"), 1, "one look-up per user")
	})
	t.Run("a rejected credential fails the preview without the token", func(t *testing.T) {
		fail := setup(t, answer(http.StatusOK, `{"ok":false,"error":"invalid_auth"}`))
		p := fail.source.(executors.Previewer)
		_, err := p.Preview(context.Background(), slack.ActionSendMessage, []byte(`{"channel":"C1","text":"x"}`), execContext())
		var e *executors.Error
		require.True(t, errors.As(err, &e))
		require.Equal(t, "invalid_auth", e.Code)
		require.False(t, strings.Contains(err.Error(), testToken))
	})
}
