package slack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/slack"
	"github.com/outboxd/outboxd/executors/slack/slacktest"
)

// reconcileBundle is a source on a loopback Slack that keeps messages.
type reconcileBundle struct {
	slack  *slacktest.Server
	source executors.Source

	mu           sync.Mutex
	unreconciled []executors.Unreconciled
}

func setupReconcile(t *testing.T) *reconcileBundle {
	t.Helper()
	b := &reconcileBundle{slack: slacktest.New(t)}
	source, err := slack.New(&slack.Config{BaseURL: b.slack.URL(), HTTPClient: b.slack.Client()})
	require.NoError(t, err)
	b.source = source
	return b
}

// execContext is the context of an invocation's attempt: retry says an
// earlier one started at first.
func (b *reconcileBundle) execContext(key string, first time.Time, retry bool) executors.ExecContext {
	return executors.ExecContext{
		Token: testToken, OrganizationID: "org_1", IdempotencyKey: key, Retry: retry, FirstStartedAt: first,
		Unreconciled: func(u executors.Unreconciled) {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.unreconciled = append(b.unreconciled, u)
		},
	}
}

func (b *reconcileBundle) reasons() []executors.Unreconciled {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]executors.Unreconciled(nil), b.unreconciled...)
}

// firstAttempt runs an attempt whose answer is lost to fault after Slack
// stored the post, and returns when it started.
func (b *reconcileBundle) firstAttempt(t *testing.T, key, params string, fault slacktest.Fault) time.Time {
	t.Helper()
	b.slack.AfterPost(func(slacktest.Message) slacktest.Fault { return fault })
	t.Cleanup(func() { b.slack.AfterPost(nil) })
	started := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := b.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(params), b.execContext(key, started, false))
	require.True(t, executors.Classify(err).Retryable, "a lost answer is retried: %v", err)
	b.slack.AfterPost(nil)
	require.Len(t, b.slack.Messages(), 1, "Slack acted on the first attempt")
	return started
}

// requireFound asserts res is the stored message, as a fresh post's answer.
func requireFound(t *testing.T, res executors.Result, stored slacktest.Message) {
	t.Helper()
	require.True(t, res.Conflict, "found, not posted")
	require.Equal(t, stored.TS, res.ProviderRef)
	var data struct {
		OK      bool   `json:"ok"`
		Channel string `json:"channel"`
		TS      string `json:"ts"`
		Message struct {
			Text     string `json:"text"`
			TS       string `json:"ts"`
			Metadata struct {
				EventType string `json:"event_type"`
			} `json:"metadata"`
		} `json:"message"`
	}
	require.NoError(t, json.Unmarshal(res.Data, &data))
	require.True(t, data.OK)
	require.Equal(t, stored.Channel, data.Channel)
	require.Equal(t, stored.TS, data.TS)
	require.Equal(t, stored.TS, data.Message.TS)
	require.Equal(t, stored.Text, data.Message.Text)
	require.Equal(t, "outboxd_action", data.Message.Metadata.EventType)
}

const channelParams = `{"channel":"C0123456789","text":"deploy finished"}`

func TestSource_ReconcilesBeforePostingAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	for name, fault := range map[string]slacktest.Fault{
		"TimeoutAfterPost":     slacktest.Stall,
		"ConnectionDropped":    slacktest.Drop,
		"ServerErrorAfterPost": slacktest.Unavailable,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setupReconcile(t)
			key := uuid.Must(uuid.NewV7()).String()
			first := b.firstAttempt(t, key, channelParams, fault)

			res, err := b.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(channelParams), b.execContext(key, first, true))
			require.NoError(t, err)
			messages := b.slack.Messages()
			require.Len(t, messages, 1, "exactly one message")
			requireFound(t, res, messages[0])
			require.Equal(t, key, metadataKey(t, messages[0]))

			require.Len(t, b.slack.Calls("chat.postMessage"), 1)
			lookups := b.slack.Calls("conversations.history")
			require.Len(t, lookups, 1)
			q := lookups[0].Query
			require.Equal(t, "C0123456789", q.Get("channel"))
			require.Equal(t, "true", q.Get("include_all_metadata"))
			require.Equal(t, "200", q.Get("limit"))
			from := first.Add(-10 * time.Minute)
			require.Equal(t, fmt.Sprintf("%d.%06d", from.Unix(), from.Nanosecond()/1000), q.Get("oldest"), "the window since the first attempt")
			require.Equal(t, "Bearer "+testToken, lookups[0].Header.Get("Authorization"))
			require.Empty(t, b.reasons())
		})
	}

	t.Run("NotPostedBeforePostsOnce", func(t *testing.T) {
		t.Parallel()
		b := setupReconcile(t)
		// Other invocations' messages, and one without metadata, are not
		// taken for this one's.
		b.slack.Seed(slacktest.Message{Channel: "C0123456789", Text: "by hand"})
		b.slack.Seed(slacktest.Message{Channel: "C0123456789", Text: "another", Metadata: &slacktest.Metadata{
			EventType: "outboxd_action", EventPayload: json.RawMessage(`{"idempotency_key":"someone-else"}`),
		}})
		key := uuid.Must(uuid.NewV7()).String()

		res, err := b.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(channelParams), b.execContext(key, time.Now(), true))
		require.NoError(t, err)
		require.False(t, res.Conflict)
		messages := b.slack.Messages()
		require.Len(t, messages, 3)
		require.Equal(t, key, metadataKey(t, messages[2]))
		require.Equal(t, messages[2].TS, res.ProviderRef)
		require.Len(t, b.slack.Calls("conversations.history"), 1)
	})

	t.Run("FirstAttemptDoesNotLookUp", func(t *testing.T) {
		t.Parallel()
		b := setupReconcile(t)
		_, err := b.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(channelParams), b.execContext("inv-1", time.Now(), false))
		require.NoError(t, err)
		require.Empty(t, b.slack.Calls("conversations.history"))
		require.Len(t, b.slack.Messages(), 1)
	})

	t.Run("FoundOnALaterPage", func(t *testing.T) {
		t.Parallel()
		b := setupReconcile(t)
		b.slack.MaxPageSize(2)
		key := uuid.Must(uuid.NewV7()).String()
		first := b.firstAttempt(t, key, channelParams, slacktest.Stall)
		// Newer messages fill the first page of the history, newest first.
		for i := range 2 {
			b.slack.Seed(slacktest.Message{Channel: "C0123456789", Text: fmt.Sprint("later ", i)})
		}

		res, err := b.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(channelParams), b.execContext(key, first, true))
		require.NoError(t, err)
		messages := b.slack.Messages()
		require.Len(t, messages, 3, "no second post")
		requireFound(t, res, messages[0])

		lookups := b.slack.Calls("conversations.history")
		require.Len(t, lookups, 2, "found on page 2")
		require.Empty(t, lookups[0].Query.Get("cursor"))
		require.NotEmpty(t, lookups[1].Query.Get("cursor"))
		require.Equal(t, lookups[0].Query.Get("oldest"), lookups[1].Query.Get("oldest"))
	})

	t.Run("ThreadReplyLooksInTheThread", func(t *testing.T) {
		t.Parallel()
		b := setupReconcile(t)
		parent := b.slack.Seed(slacktest.Message{Channel: "C0123456789", Text: "incident"})
		params := `{"channel":"C0123456789","text":"resolved","thread_ts":"` + parent + `"}`
		key := uuid.Must(uuid.NewV7()).String()
		started := time.Now()
		b.slack.AfterPost(func(slacktest.Message) slacktest.Fault { return slacktest.Drop })
		_, err := b.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(params), b.execContext(key, started, false))
		require.Error(t, err)
		b.slack.AfterPost(nil)

		res, err := b.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(params), b.execContext(key, started, true))
		require.NoError(t, err)
		messages := b.slack.Messages()
		require.Len(t, messages, 2, "the parent and one reply")
		requireFound(t, res, messages[1])
		lookups := b.slack.Calls("conversations.replies")
		require.Len(t, lookups, 1)
		require.Equal(t, parent, lookups[0].Query.Get("ts"))
		require.Empty(t, b.slack.Calls("conversations.history"))
	})

	t.Run("WindowFromTheKeyWithoutAFirstStart", func(t *testing.T) {
		t.Parallel()
		b := setupReconcile(t)
		key := uuid.Must(uuid.NewV7())
		_, err := b.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(channelParams), b.execContext(key.String(), time.Time{}, true))
		require.NoError(t, err)
		lookups := b.slack.Calls("conversations.history")
		require.Len(t, lookups, 1)
		from := time.Unix(key.Time().UnixTime()).Add(-10 * time.Minute)
		require.Equal(t, fmt.Sprintf("%d.%06d", from.Unix(), from.Nanosecond()/1000), lookups[0].Query.Get("oldest"))
	})

	t.Run("UnboundedHistoryFailsClosed", func(t *testing.T) {
		t.Parallel()
		b := setupReconcile(t)
		b.slack.MaxPageSize(1)
		for i := range 51 {
			b.slack.Seed(slacktest.Message{Channel: "C0123456789", Text: fmt.Sprint("busy ", i)})
		}
		_, err := b.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(channelParams), b.execContext("inv-busy", time.Now().Add(-time.Hour), true))
		execErr := requireExecError(t, err)
		require.Equal(t, "idempotency_unverified", execErr.Code)
		require.False(t, execErr.Retryable)
		require.Len(t, b.slack.Calls("conversations.history"), 50)
		require.Empty(t, b.slack.Calls("chat.postMessage"), "posting could make a second message")
	})
}

func TestSource_ReconcileUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("MissingScopePostsAgainAndSaysSo", func(t *testing.T) {
		t.Parallel()

		for channel, scope := range map[string]string{"C0123456789": "channels:history", "G0123456789": "groups:history"} {
			b := setupReconcile(t)
			b.slack.SetScopes(testToken, "chat:write")
			params := `{"channel":"` + channel + `","text":"deploy finished"}`
			key := uuid.Must(uuid.NewV7()).String()
			first := b.firstAttempt(t, key, params, slacktest.Stall)

			res, err := b.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(params), b.execContext(key, first, true))
			require.NoError(t, err, "the action does not fail for want of the scope")
			require.False(t, res.Conflict)
			require.Len(t, b.slack.Messages(), 2, "today's behaviour: posted again")
			require.Equal(t, []executors.Unreconciled{{
				Reason: "missing_scope", CredentialNote: "reconcile_unavailable: missing " + scope + " scope",
			}}, b.reasons())
		}
	})

	t.Run("ChannelNamePostsWithoutLookUp", func(t *testing.T) {
		t.Parallel()
		b := setupReconcile(t)
		b.slack.AddChannel("C0123456789", "general")
		_, err := b.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(`{"channel":"#general","text":"hi"}`), b.execContext("inv-2", time.Now(), true))
		require.NoError(t, err)
		require.Empty(t, b.slack.Calls("conversations.history"))
		require.Len(t, b.slack.Messages(), 1)
		require.Equal(t, []executors.Unreconciled{{Reason: "channel_name"}}, b.reasons())
	})

	t.Run("LookUpFailureDoesNotPost", func(t *testing.T) {
		t.Parallel()

		for body, code := range map[string]string{
			`{"ok":true}`:                           "invalid_response",
			`{"ok":true,"messages":{}}`:             "invalid_response",
			`{"ok":false,"error":"invalid_auth"}`:   "invalid_auth",
			`{"ok":false,"error":"internal_error"}`: "internal_error",
			// More follow, but without a cursor the rest cannot be read:
			// the post may be there.
			`{"ok":true,"messages":[],"has_more":true}`:                                        "invalid_response",
			`{"ok":true,"messages":[],"has_more":true,"response_metadata":{"next_cursor":""}}`: "invalid_response",
		} {
			bundle := setup(t, answer(http.StatusOK, body))
			ec := execContext()
			ec.Retry = true
			_, err := bundle.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(sendParams), ec)
			execErr := requireExecError(t, err)
			require.Equal(t, code, execErr.Code, body)
			reqs := bundle.recorded()
			require.Len(t, reqs, 1, body)
			require.Equal(t, "/conversations.history", reqs[0].Path, "no post after a failed look-up")
		}

		bundle := setup(t, answer(http.StatusServiceUnavailable, ``, "Retry-After", "3"))
		ec := execContext()
		ec.Retry = true
		_, err := bundle.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(sendParams), ec)
		execErr := requireExecError(t, err)
		require.Equal(t, "http_503", execErr.Code)
		require.True(t, execErr.Retryable)
		require.Equal(t, 3*time.Second, execErr.RetryAfter)
		require.Equal(t, "Slack answered HTTP 503 to conversations.history, the look-up for the message of an earlier attempt", execErr.Message,
			"a server error is not called a rate limit")
		require.Len(t, bundle.recorded(), 1)
	})
}

// TestSource_RateLimitedPostAfterNoLookUp: a retry's post Slack
// rate-limits did nothing, but an earlier attempt's post may still exist
// unless the look-up said there is none. When the look-up could not be
// made (a token without the history scope, a channel the app cannot
// read, a channel given by name), the refusal is not "nothing done": the
// next execution looks again, so once the scope is granted it finds the
// earlier post instead of posting a second one.
func TestSource_RateLimitedPostAfterNoLookUp(t *testing.T) {
	t.Parallel()

	for name, tc := range map[string]struct {
		params  string
		history string
		notDone bool
	}{
		"MissingScope":  {channelParams, `{"ok":false,"error":"missing_scope","needed":"channels:history"}`, false},
		"NotInChannel":  {channelParams, `{"ok":false,"error":"not_in_channel"}`, false},
		"ChannelName":   {`{"channel":"#general","text":"deploy finished"}`, "", false},
		"LookedFoundNo": {channelParams, `{"ok":true,"messages":[],"has_more":false}`, true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, "/conversations.history") {
					answer(http.StatusOK, tc.history)(w, r)
					return
				}
				answer(http.StatusTooManyRequests, `{"ok":false,"error":"ratelimited"}`, "Retry-After", "5")(w, r)
			})
			ec := execContext()
			ec.Retry = true
			_, err := b.source.Execute(context.Background(), slack.ActionSendMessage, json.RawMessage(tc.params), ec)
			e := requireExecError(t, err)
			require.Equal(t, "ratelimited", e.Code)
			require.Equal(t, tc.notDone, e.NotDone)
			require.Equal(t, "/chat.postMessage", b.recorded()[len(b.recorded())-1].Path, "posted")
		})
	}
}

// metadataKey is the idempotency key in a stored message's metadata.
func metadataKey(t *testing.T, m slacktest.Message) string {
	t.Helper()
	require.NotNil(t, m.Metadata)
	require.Equal(t, "outboxd_action", m.Metadata.EventType)
	var payload struct {
		IdempotencyKey string `json:"idempotency_key"`
	}
	require.NoError(t, json.Unmarshal(m.Metadata.EventPayload, &payload))
	return payload.IdempotencyKey
}

// TestSource_ReconcileRateLimited: a look-up Slack rate-limits (history
// allows an app outside the Marketplace one call a minute, 15 messages
// each) waits as Slack asks without posting, and says the wait is the
// look-up's own, so the posts of other invocations are not held back.
func TestSource_ReconcileRateLimited(t *testing.T) {
	t.Parallel()
	b := setupReconcile(t)
	key := uuid.Must(uuid.NewV7()).String()
	first := b.firstAttempt(t, key, channelParams, slacktest.Unavailable)
	for i := range 20 { // posted since: the look-up needs a second page
		b.slack.Seed(slacktest.Message{Channel: "C0123456789", Text: fmt.Sprintf("chatter %d", i)})
	}
	b.slack.MaxPageSize(15)
	b.slack.LimitHistory(1)

	_, err := b.source.Execute(context.Background(), slack.ActionSendMessage, json.RawMessage(channelParams), b.execContext(key, first, true))
	e := executors.Classify(err)
	require.Equal(t, "ratelimited", e.Code, e.Error())
	require.True(t, e.Retryable)
	require.Equal(t, time.Minute, e.RetryAfter)
	require.True(t, e.OtherLimit, "the look-up's limit is not the post's")
	require.False(t, e.NotDone, "the look-up did not finish: an earlier post may exist")
	require.Contains(t, e.Message, "conversations.history")
	require.Len(t, b.slack.Calls("conversations.history"), 2)
	require.Len(t, b.slack.Calls("chat.postMessage"), 1, "not posted again while unverified")
}

// TestSource_ReconcileResumesAfterTheLimit: a look-up Slack rate-limited
// on its second page saves where it stopped, and the run after the wait
// reads that page, not the first again (whose call would use the minute's
// one and meet the limit on the second page every time).
func TestSource_ReconcileResumesAfterTheLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	// brokenOff runs a look-up that reads the first page of 15 and is
	// rate-limited on the second, and returns what it saved.
	brokenOff := func(t *testing.T, b *reconcileBundle, key string, first time.Time, params string) json.RawMessage {
		t.Helper()
		b.slack.MaxPageSize(15)
		b.slack.LimitHistory(1)
		var saved json.RawMessage
		ec := b.execContext(key, first, true)
		ec.Resume.Save = func(raw json.RawMessage) { saved = raw }
		_, err := b.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(params), ec)
		require.Equal(t, "ratelimited", executors.Classify(err).Code, "%v", err)
		require.NotEmpty(t, saved, "where the look-up stopped is saved")
		b.slack.LimitHistory(1) // the next minute's call
		return saved
	}
	chatter := func(b *slacktest.Server, n int) {
		for i := range n {
			b.Seed(slacktest.Message{Channel: "C0123456789", Text: fmt.Sprintf("chatter %d", i)})
		}
	}

	t.Run("FoundOnThePageItStoppedAt", func(t *testing.T) {
		t.Parallel()
		b := setupReconcile(t)
		key := uuid.Must(uuid.NewV7()).String()
		first := b.firstAttempt(t, key, channelParams, slacktest.Stall)
		chatter(b.slack, 20)
		saved := brokenOff(t, b, key, first, channelParams)

		ec := b.execContext(key, first, true)
		ec.Resume.Saved = saved
		res, err := b.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(channelParams), ec)
		require.NoError(t, err)
		messages := b.slack.Messages()
		require.Len(t, messages, 21, "no second post")
		requireFound(t, res, messages[0])
		lookups := b.slack.Calls("conversations.history")
		require.Len(t, lookups, 3, "page 1, page 2 limited, page 2")
		require.Empty(t, lookups[0].Query.Get("cursor"))
		require.NotEmpty(t, lookups[2].Query.Get("cursor"), "the first page is not read again")
		require.Equal(t, lookups[1].Query.Get("cursor"), lookups[2].Query.Get("cursor"))
		require.Equal(t, lookups[0].Query.Get("oldest"), lookups[2].Query.Get("oldest"))
	})

	t.Run("AbsentPostsOnce", func(t *testing.T) {
		t.Parallel()
		b := setupReconcile(t)
		key := uuid.Must(uuid.NewV7()).String()
		first := time.Now()
		chatter(b.slack, 20)
		saved := brokenOff(t, b, key, first, channelParams)

		ec := b.execContext(key, first, true)
		ec.Resume.Saved = saved
		res, err := b.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(channelParams), ec)
		require.NoError(t, err)
		require.False(t, res.Conflict)
		require.Len(t, b.slack.Calls("conversations.history"), 3)
		require.Len(t, b.slack.Calls("chat.postMessage"), 1)
		messages := b.slack.Messages()
		require.Len(t, messages, 21)
		require.Equal(t, key, metadataKey(t, messages[20]))
	})

	t.Run("ThreadRepliesPostOnce", func(t *testing.T) {
		t.Parallel()
		b := setupReconcile(t)
		parent := b.slack.Seed(slacktest.Message{Channel: "C0123456789", Text: "incident"})
		for i := range 20 {
			b.slack.Seed(slacktest.Message{Channel: "C0123456789", ThreadTS: parent, Text: fmt.Sprint("reply ", i)})
		}
		params := `{"channel":"C0123456789","text":"resolved","thread_ts":"` + parent + `"}`
		key := uuid.Must(uuid.NewV7()).String()
		first := time.Now().Add(-time.Minute)
		b.slack.MaxPageSize(15)
		b.slack.LimitHistory(1)
		var saved json.RawMessage
		ec := b.execContext(key, first, true)
		ec.Resume.Save = func(raw json.RawMessage) { saved = raw }
		_, err := b.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(params), ec)
		require.Equal(t, "ratelimited", executors.Classify(err).Code, "%v", err)
		require.NotEmpty(t, saved)

		b.slack.LimitHistory(1)
		ec = b.execContext(key, first, true)
		ec.Resume.Saved = saved
		res, err := b.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(params), ec)
		require.NoError(t, err)
		require.False(t, res.Conflict)
		lookups := b.slack.Calls("conversations.replies")
		require.Len(t, lookups, 3, "page 1 once, page 2 twice")
		require.Equal(t, lookups[1].Query.Get("cursor"), lookups[2].Query.Get("cursor"))
		require.Len(t, b.slack.Calls("chat.postMessage"), 1)
		require.Empty(t, b.slack.Calls("conversations.history"))
	})

	t.Run("ExpiredCursorStartsOver", func(t *testing.T) {
		t.Parallel()
		b := setupReconcile(t)
		b.slack.MaxPageSize(15)
		key := uuid.Must(uuid.NewV7()).String()
		first := b.firstAttempt(t, key, channelParams, slacktest.Stall)
		chatter(b.slack, 20)

		// A cursor Slack no longer takes (invalid_cursor) is not the
		// invocation's failure: the look-up reads from the first page.
		lookup := url.Values{
			"channel": {"C0123456789"}, "limit": {"200"}, "include_all_metadata": {"true"},
			"oldest": {fmt.Sprintf("%d.%06d", first.Add(-10*time.Minute).Unix(), first.Add(-10*time.Minute).Nanosecond()/1000)},
		}
		saved, err := json.Marshal(map[string]any{"query": "conversations.history?" + lookup.Encode(), "cursor": "bm9wZQ==", "pages": 1})
		require.NoError(t, err)
		ec := b.execContext(key, first, true)
		ec.Resume.Saved = saved
		res, err := b.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(channelParams), ec)
		require.NoError(t, err)
		requireFound(t, res, b.slack.Messages()[0])
		lookups := b.slack.Calls("conversations.history")
		require.Len(t, lookups, 3, "the saved cursor, then pages 1 and 2")
		require.Equal(t, "bm9wZQ==", lookups[0].Query.Get("cursor"), "the saved progress was taken")
		require.Empty(t, lookups[1].Query.Get("cursor"))
	})

	t.Run("AnotherLookUpsProgressIsNotTaken", func(t *testing.T) {
		t.Parallel()
		b := setupReconcile(t)
		key := uuid.Must(uuid.NewV7()).String()
		first := b.firstAttempt(t, key, channelParams, slacktest.Stall)
		chatter(b.slack, 20)
		other := `{"channel":"C0999999999","text":"deploy finished"}`
		for i := range 20 {
			b.slack.Seed(slacktest.Message{Channel: "C0999999999", Text: fmt.Sprint("other ", i)})
		}
		saved := brokenOff(t, b, key, first, other)

		ec := b.execContext(key, first, true)
		ec.Resume.Saved = saved
		b.slack.LimitHistory(-1)
		res, err := b.source.Execute(ctx, slack.ActionSendMessage, json.RawMessage(channelParams), ec)
		require.NoError(t, err)
		requireFound(t, res, b.slack.Messages()[0])
		lookups := b.slack.Calls("conversations.history")
		require.Len(t, lookups, 4)
		require.Equal(t, "C0123456789", lookups[2].Query.Get("channel"))
		require.Empty(t, lookups[2].Query.Get("cursor"), "another channel's cursor is not used")
	})
}
