package slacktest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors/slack/slacktest"
)

// call sends a Web API call with token and returns the decoded answer.
func call(t *testing.T, s *slacktest.Server, method, token string, args url.Values, body string) map[string]any {
	t.Helper()
	verb := http.MethodGet
	if body != "" {
		verb = http.MethodPost
	}
	req, err := http.NewRequest(verb, s.URL()+"/"+method+"?"+args.Encode(), strings.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	resp, err := s.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out), string(raw))
	return out
}

// tss returns the ts of each message of an answer.
func tss(answer map[string]any) []string {
	var out []string
	for _, m := range answer["messages"].([]any) {
		out = append(out, m.(map[string]any)["ts"].(string))
	}
	return out
}

func TestServer_History(t *testing.T) {
	t.Parallel()
	s := slacktest.New(t)
	var ts []string
	for _, text := range []string{"one", "two", "three", "four", "five"} {
		ts = append(ts, s.Seed(slacktest.Message{Channel: "C1", Text: text, Metadata: &slacktest.Metadata{
			EventType: "e", EventPayload: json.RawMessage(`{"n":"` + text + `"}`),
		}}))
	}
	reply := s.Seed(slacktest.Message{Channel: "C1", Text: "reply", ThreadTS: ts[0]})

	t.Run("NewestFirstInPages", func(t *testing.T) {
		t.Parallel()
		page := call(t, s, "conversations.history", "tok", url.Values{"channel": {"C1"}, "limit": {"2"}}, "")
		require.Equal(t, true, page["ok"])
		require.Equal(t, []string{ts[4], ts[3]}, tss(page))
		require.Equal(t, true, page["has_more"])
		cursor := page["response_metadata"].(map[string]any)["next_cursor"].(string)
		require.NotEmpty(t, cursor)

		var all []string
		all = append(all, tss(page)...)
		for page["has_more"] == true {
			cursor := page["response_metadata"].(map[string]any)["next_cursor"].(string)
			page = call(t, s, "conversations.history", "tok", url.Values{"channel": {"C1"}, "limit": {"2"}, "cursor": {cursor}}, "")
			all = append(all, tss(page)...)
		}
		require.Equal(t, []string{ts[4], ts[3], ts[2], ts[1], ts[0]}, all, "thread replies are not in the history")
		require.Empty(t, page["response_metadata"].(map[string]any)["next_cursor"])
	})

	t.Run("OldestAndLatest", func(t *testing.T) {
		t.Parallel()
		page := call(t, s, "conversations.history", "tok", url.Values{"channel": {"C1"}, "oldest": {ts[1]}, "latest": {ts[3]}}, "")
		require.Equal(t, []string{ts[2]}, tss(page), "exclusive by default")
		page = call(t, s, "conversations.history", "tok", url.Values{"channel": {"C1"}, "oldest": {ts[1]}, "latest": {ts[3]}, "inclusive": {"true"}}, "")
		require.Equal(t, []string{ts[3], ts[2], ts[1]}, tss(page))
	})

	t.Run("MetadataOnlyWhenAsked", func(t *testing.T) {
		t.Parallel()
		page := call(t, s, "conversations.history", "tok", url.Values{"channel": {"C1"}, "limit": {"1"}}, "")
		require.NotContains(t, page["messages"].([]any)[0], "metadata")
		page = call(t, s, "conversations.history", "tok", url.Values{"channel": {"C1"}, "limit": {"1"}, "include_all_metadata": {"true"}}, "")
		require.Equal(t, map[string]any{"event_type": "e", "event_payload": map[string]any{"n": "five"}}, page["messages"].([]any)[0].(map[string]any)["metadata"])
	})

	t.Run("Replies", func(t *testing.T) {
		t.Parallel()
		page := call(t, s, "conversations.replies", "tok", url.Values{"channel": {"C1"}, "ts": {ts[0]}}, "")
		require.Equal(t, []string{ts[0], reply}, tss(page), "the parent, then the replies oldest first")
		page = call(t, s, "conversations.replies", "tok", url.Values{"channel": {"C1"}, "ts": {"1.000001"}}, "")
		require.Equal(t, "thread_not_found", page["error"])
	})

	t.Run("Errors", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, "not_authed", call(t, s, "conversations.history", "", url.Values{"channel": {"C1"}}, "")["error"])
		require.Equal(t, "channel_not_found", call(t, s, "conversations.history", "tok", url.Values{"channel": {"#general"}}, "")["error"])
		require.Equal(t, "channel_not_found", call(t, s, "conversations.history", "tok", url.Values{"channel": {"C9"}}, "")["error"])
		require.Equal(t, "invalid_cursor", call(t, s, "conversations.history", "tok", url.Values{"channel": {"C1"}, "cursor": {"bogus"}}, "")["error"])
	})
}

func TestServer_Scopes(t *testing.T) {
	t.Parallel()
	s := slacktest.New(t)
	s.SetScopes("limited", "chat:write", "channels:read")

	posted := call(t, s, "chat.postMessage", "limited", nil, `{"channel":"G1","text":"hi","metadata":{"event_type":"e","event_payload":{"k":"v"}}}`)
	require.Equal(t, true, posted["ok"])
	require.Equal(t, "G1", posted["channel"])
	require.Equal(t, map[string]any{"event_type": "e", "event_payload": map[string]any{"k": "v"}}, posted["message"].(map[string]any)["metadata"])

	answer := call(t, s, "conversations.history", "limited", url.Values{"channel": {"G1"}}, "")
	require.Equal(t, map[string]any{"ok": false, "error": "missing_scope", "needed": "groups:history", "provided": "chat:write,channels:read"}, answer)
	require.Equal(t, "channels:history", call(t, s, "conversations.history", "limited", url.Values{"channel": {"C1"}}, "")["needed"])
	require.Equal(t, true, call(t, s, "conversations.history", "other", url.Values{"channel": {"G1"}}, "")["ok"], "other tokens have every scope")

	s.SetScopes("reader", "channels:history")
	require.Equal(t, "chat:write", call(t, s, "chat.postMessage", "reader", nil, `{"channel":"C1","text":"hi"}`)["needed"])
	require.Len(t, s.Messages(), 1)
}

func TestViewsOpen(t *testing.T) {
	t.Parallel()
	s := slacktest.New(t)
	view := `{"type":"modal","callback_id":"cb","private_metadata":"{\"o\":\"org\"}","title":{"type":"plain_text","text":"Deny request"},` +
		`"submit":{"type":"plain_text","text":"Deny"},"blocks":[{"type":"input","block_id":"b","label":{"type":"plain_text","text":"Why"},"element":{"type":"plain_text_input","action_id":"a"}}]}`
	open := func(trigger, view string) map[string]any {
		return call(t, s, "views.open", "xoxb-1", nil, `{"trigger_id":"`+trigger+`","view":`+view+`}`)
	}
	got := open("12345.98765.abcd2358fdea", view)
	require.Equal(t, true, got["ok"], got)
	v := got["view"].(map[string]any)
	require.Equal(t, "modal", v["type"])
	require.Equal(t, "cb", v["callback_id"])
	require.Equal(t, `{"o":"org"}`, v["private_metadata"])
	require.NotEmpty(t, v["id"])
	require.Equal(t, map[string]any{"values": map[string]any{}}, v["state"])
	require.Len(t, s.Views(), 1)
	require.Equal(t, "12345.98765.abcd2358fdea", s.Views()[0].TriggerID)

	require.Equal(t, "exchanged_trigger_id", open("12345.98765.abcd2358fdea", view)["error"], "a trigger opens one view")
	require.Equal(t, "invalid_trigger_id", open("nope", view)["error"])
	noSubmit := strings.Replace(view, `"submit":{"type":"plain_text","text":"Deny"},`, "", 1)
	require.Equal(t, "invalid_arguments", open("12345.98765.abcd", noSubmit)["error"], "an input needs a submit button")
	require.Equal(t, "not_authed", call(t, s, "views.open", "", nil, `{"trigger_id":"1.2.a","view":`+view+`}`)["error"])
	require.Len(t, s.Views(), 1)
}

func TestChatUpdate(t *testing.T) {
	t.Parallel()
	s := slacktest.New(t)
	ts := s.Seed(slacktest.Message{Channel: "C0123", Text: "before"})
	got := call(t, s, "chat.update", "xoxb-1", nil, `{"channel":"C0123","ts":"`+ts+`","text":"after"}`)
	require.Equal(t, true, got["ok"], got)
	require.Equal(t, "after", s.Messages()[0].Text)
	require.Equal(t, "message_not_found", call(t, s, "chat.update", "xoxb-1", nil, `{"channel":"C0123","ts":"1.000001","text":"x"}`)["error"])
	require.Equal(t, "channel_not_found", call(t, s, "chat.update", "xoxb-1", nil, `{"channel":"C0999","ts":"`+ts+`","text":"x"}`)["error"])
}
