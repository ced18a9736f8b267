// Package slacktest is a loopback Slack Web API for tests: conversations
// with their messages in memory, served in Slack's shapes for the methods
// outboxd calls. chat.postMessage stores the message with its metadata;
// conversations.history and conversations.replies read them back with
// oldest, latest, inclusive, limit, cursor and include_all_metadata, newest
// first (history) or oldest first (replies), paginated with has_more and
// response_metadata.next_cursor. Tokens may be given a set of scopes, and a
// method whose scope a token lacks answers missing_scope with needed and
// provided. Faults can be injected after a post is stored (a stalled or
// dropped answer, a 5xx), as when Slack acts but its answer is lost.
// chat.update rewrites a stored message; views.open opens a modal for a
// trigger_id (once each, in Slack's format) and answers with the view.
package slacktest

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/outboxd/outboxd/executors/providertest"
)

// Slack's IDs of the app the tokens belong to.
const (
	BotUserID = "U0BOT00001"
	BotID     = "B0BOT00001"
	AppID     = "A0APP00001"
)

// maxLimit is the largest limit conversations.history takes.
const maxLimit = 999

// conversationID matches the IDs of channels (C), private channels (G) and
// direct messages (D).
var conversationID = regexp.MustCompile(`^[CGD][A-Z0-9]+$`)

// Metadata is a message's metadata, as chat.postMessage takes it.
type Metadata struct {
	EventType    string          `json:"event_type"`
	EventPayload json.RawMessage `json:"event_payload"`
}

// Message is a stored message.
type Message struct {
	Channel  string
	TS       string
	ThreadTS string
	Text     string
	User     string
	BotID    string
	AppID    string
	Metadata *Metadata
}

// Request is what the server saw of one call.
type Request = providertest.Request

// Fault is what becomes of a stored post's answer.
type Fault int

// The faults a post may meet after it is stored.
const (
	// Answer answers normally.
	Answer Fault = iota
	// Stall holds the answer until the client gives up (or a minute).
	Stall
	// Drop closes the connection without an answer.
	Drop
	// Unavailable answers HTTP 503.
	Unavailable
)

// Server is a loopback Slack. Its methods are safe for concurrent use.
type Server struct {
	srv *providertest.Server

	mu        sync.Mutex
	messages  map[string][]*Message // by conversation, oldest first
	names     map[string]string     // "#name" → conversation id
	users     map[string]string     // user id → display name
	scopes    map[string][]string   // token → scopes; a token not here has all
	afterPost func(Message) Fault
	pageSize  int
	// historyCalls is how many history or replies calls are answered
	// before the rest get a 429 (negative: all are).
	historyCalls int
	lastTS       time.Time
	views        []View
	triggers     map[string]bool // trigger_ids exchanged already
}

// View is a modal views.open opened.
type View struct {
	ID        string
	TriggerID string
	// View is the view as given, decoded.
	View map[string]any
}

// New starts a server, closed when t ends. Every token is accepted with
// every scope until SetScopes says otherwise.
func New(t testing.TB) *Server {
	s := &Server{messages: map[string][]*Message{}, names: map[string]string{}, users: map[string]string{}, scopes: map[string][]string{}, triggers: map[string]bool{}, historyCalls: -1}
	s.srv = providertest.New(t, http.HandlerFunc(s.serve))
	return s
}

// URL is the Web API root, the source's base URL.
func (s *Server) URL() string { return s.srv.URL() }

// Client is a client that reaches the server.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// AddChannel names a conversation, so a post may address it as "#name".
func (s *Server) AddChannel(id, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.names["#"+name] = id
}

// AddUser makes a user users.info answers, with its display name.
func (s *Server) AddUser(id, displayName string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[id] = displayName
}

// SetScopes gives token these scopes (and only these).
func (s *Server) SetScopes(token string, scopes ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scopes[token] = scopes
}

// AfterPost decides the fault each stored post's answer meets; nil answers
// every post.
func (s *Server) AfterPost(f func(Message) Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.afterPost = f
}

// MaxPageSize caps the pages of history and replies below the limit asked
// for, as Slack may ("fewer than the requested number of items may be
// returned"); 0 means no cap.
func (s *Server) MaxPageSize(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pageSize = n
}

// LimitHistory answers the next n history or replies calls and every
// later one with a 429 (Retry-After: 60), as Slack limits an app outside
// its Marketplace to one a minute; a negative n lifts the limit.
func (s *Server) LimitHistory(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.historyCalls = n
}

// Seed stores m as if it had been posted now, and returns its ts.
func (s *Server) Seed(m Message) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.store(&m).TS
}

// Messages returns copies of every stored message, by conversation and
// then oldest first.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, id := range slices.Sorted(maps.Keys(s.messages)) {
		for _, m := range s.messages[id] {
			out = append(out, *m)
		}
	}
	return out
}

// Views returns the modals views.open opened, in order.
func (s *Server) Views() []View {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.views)
}

// Requests returns what the server saw, in order.
func (s *Server) Requests() []Request { return s.srv.Requests() }

// Calls returns the requests to one method, such as "chat.postMessage".
func (s *Server) Calls(method string) []Request {
	var out []Request
	for _, r := range s.Requests() {
		if strings.HasSuffix(r.Path, "/"+method) {
			out = append(out, r)
		}
	}
	return out
}

// ServeHTTP records and answers one Web API call, so the server can also
// be wrapped by another handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.srv.ServeHTTP(w, r) }

// serve answers one Web API call; providertest has recorded it.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	method := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if token == "" {
		WriteError(w, "not_authed")
		return
	}
	switch method {
	case "chat.postMessage":
		s.postMessage(w, r, token, body)
	case "chat.update":
		s.update(w, r, token, body)
	case "views.open":
		s.openView(w, r, body)
	case "conversations.history":
		s.history(w, r, token, body, false)
	case "conversations.replies":
		s.history(w, r, token, body, true)
	case "conversations.info", "users.info":
		s.info(w, r, method, token, body)
	default:
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"ok":false,"error":"unknown_method","req_method":"`+method+`"}`)
	}
}

// WriteError answers ok:false with code, with HTTP 200 as Slack does.
func WriteError(w http.ResponseWriter, code string, fields ...string) {
	body := map[string]any{"ok": false, "error": code}
	for i := 0; i+1 < len(fields); i += 2 {
		body[fields[i]] = fields[i+1]
	}
	providertest.WriteJSON(w, http.StatusOK, body)
}

// authorize answers missing_scope when token lacks scope. The caller holds
// s.mu.
func (s *Server) authorize(w http.ResponseWriter, token, scope string) bool {
	granted, limited := s.scopes[token]
	if !limited || slices.Contains(granted, scope) {
		return true
	}
	WriteError(w, "missing_scope", "needed", scope, "provided", strings.Join(granted, ","))
	return false
}

// historyScope is the scope reading a conversation's history needs.
func historyScope(id string) string {
	switch id[0] {
	case 'G':
		return "groups:history"
	case 'D':
		return "im:history"
	}
	return "channels:history"
}

func (s *Server) postMessage(w http.ResponseWriter, r *http.Request, token string, body []byte) {
	var in struct {
		Channel  string    `json:"channel"`
		Text     string    `json:"text"`
		ThreadTS string    `json:"thread_ts"`
		Metadata *Metadata `json:"metadata"`
	}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") || json.Unmarshal(body, &in) != nil {
		WriteError(w, "invalid_json")
		return
	}
	s.mu.Lock()
	if !s.authorize(w, token, "chat:write") {
		s.mu.Unlock()
		return
	}
	id := in.Channel
	if named, ok := s.names[in.Channel]; ok {
		id = named
	}
	switch {
	case !conversationID.MatchString(id):
		s.mu.Unlock()
		WriteError(w, "channel_not_found")
		return
	case in.Text == "":
		s.mu.Unlock()
		WriteError(w, "no_text")
		return
	case in.Metadata != nil && (in.Metadata.EventType == "" || !json.Valid(in.Metadata.EventPayload)):
		s.mu.Unlock()
		WriteError(w, "invalid_metadata_format")
		return
	case in.ThreadTS != "" && s.find(id, in.ThreadTS) == nil:
		s.mu.Unlock()
		WriteError(w, "thread_not_found")
		return
	}
	m := s.store(&Message{
		Channel: id, Text: in.Text, ThreadTS: in.ThreadTS, User: BotUserID, BotID: BotID, AppID: AppID, Metadata: in.Metadata,
	})
	fault := Answer
	if s.afterPost != nil {
		fault = s.afterPost(*m)
	}
	answer := map[string]any{"ok": true, "channel": id, "ts": m.TS, "message": render(m, true)}
	s.mu.Unlock()

	switch fault {
	case Stall:
		providertest.Stall(r, time.Minute)
	case Drop:
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			_ = conn.Close()
		}
	case Unavailable:
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, "<html>service unavailable</html>")
	default:
		providertest.WriteJSON(w, http.StatusOK, answer)
	}
}

// store gives m the next ts and stores it. The caller holds s.mu.
func (s *Server) store(m *Message) *Message {
	now := time.Now().Truncate(time.Microsecond)
	if !now.After(s.lastTS) {
		now = s.lastTS.Add(time.Microsecond)
	}
	s.lastTS = now
	m.TS = fmt.Sprintf("%d.%06d", now.Unix(), now.Nanosecond()/1000)
	s.messages[m.Channel] = append(s.messages[m.Channel], m)
	return m
}

// find returns a conversation's message with ts. The caller holds s.mu.
func (s *Server) find(channel, ts string) *Message {
	for _, m := range s.messages[channel] {
		if m.TS == ts {
			return m
		}
	}
	return nil
}

// render is a message as Slack shows it; its metadata only with
// withMetadata.
func render(m *Message, withMetadata bool) map[string]any {
	out := map[string]any{
		"type": "message", "subtype": "bot_message", "text": m.Text, "ts": m.TS,
		"user": m.User, "bot_id": m.BotID, "app_id": m.AppID,
	}
	if m.ThreadTS != "" {
		out["thread_ts"] = m.ThreadTS
	}
	if m.Metadata != nil && withMetadata {
		out["metadata"] = m.Metadata
	}
	return out
}

// history answers conversations.history or, with replies,
// conversations.replies, whose arguments come in the query or a form body.
func (s *Server) history(w http.ResponseWriter, r *http.Request, token string, body []byte, replies bool) {
	s.mu.Lock()
	limited := s.historyCalls == 0
	if s.historyCalls > 0 {
		s.historyCalls--
	}
	s.mu.Unlock()
	if limited {
		w.Header().Set("Retry-After", "60")
		providertest.WriteJSON(w, http.StatusTooManyRequests, map[string]any{"ok": false, "error": "ratelimited"})
		return
	}
	args := r.URL.Query()
	if form, err := url.ParseQuery(string(body)); err == nil && strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		for k, v := range form {
			args[k] = v
		}
	}
	channel := args.Get("channel")
	if channel == "" {
		WriteError(w, "channel_not_found")
		return
	}
	oldest, ok1 := parseTS(args.Get("oldest"), 0)
	latest, ok2 := parseTS(args.Get("latest"), math.MaxInt64)
	limit, err := strconv.Atoi(cmp.Or(args.Get("limit"), "100"))
	if !ok1 || !ok2 || err != nil || limit < 0 {
		WriteError(w, "invalid_arguments")
		return
	}
	if limit == 0 || limit > maxLimit {
		limit = maxLimit
	}
	inclusive := args.Get("inclusive") == "true" || args.Get("inclusive") == "1"
	withMetadata := args.Get("include_all_metadata") == "true" || args.Get("include_all_metadata") == "1"

	out, code, fields := s.page(args, channel, replies, limit, inclusive, withMetadata, oldest, latest, token)
	if code != "" {
		WriteError(w, code, fields...)
		return
	}
	providertest.WriteJSON(w, http.StatusOK, out)
}

// page builds the answer of a history or replies call, or the ok:false
// code (and fields) to answer with.
func (s *Server) page(args url.Values, channel string, replies bool, limit int, inclusive, withMetadata bool, oldest, latest int64, token string) (map[string]any, string, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !conversationID.MatchString(channel) {
		return nil, "channel_not_found", nil
	}
	if granted, limited := s.scopes[token]; limited && !slices.Contains(granted, historyScope(channel)) {
		return nil, "missing_scope", []string{"needed", historyScope(channel), "provided", strings.Join(granted, ",")}
	}
	if _, ok := s.messages[channel]; !ok {
		return nil, "channel_not_found", nil
	}
	if s.pageSize > 0 {
		limit = min(limit, s.pageSize)
	}

	inRange := func(m *Message) bool {
		ts, _ := parseTS(m.TS, 0)
		if inclusive {
			return ts >= oldest && ts <= latest
		}
		return ts > oldest && ts < latest
	}
	var list []*Message
	var parent *Message
	if replies {
		thread := args.Get("ts")
		parent = s.find(channel, thread)
		if parent == nil {
			return nil, "thread_not_found", nil
		}
		for _, m := range s.messages[channel] {
			if m.ThreadTS == thread && m.TS != thread && inRange(m) {
				list = append(list, m) // oldest first
			}
		}
	} else {
		for _, m := range slices.Backward(s.messages[channel]) {
			if m.ThreadTS == "" && inRange(m) {
				list = append(list, m) // newest first
			}
		}
	}

	start := 0
	if c := args.Get("cursor"); c != "" {
		raw, err := base64.StdEncoding.DecodeString(c)
		next, found := strings.CutPrefix(string(raw), "next_ts:")
		start = slices.IndexFunc(list, func(m *Message) bool { return m.TS == next })
		if err != nil || !found || start < 0 {
			return nil, "invalid_cursor", nil
		}
	}
	page := list[start:min(start+limit, len(list))]
	messages := make([]any, 0, len(page)+1)
	if parent != nil && start == 0 {
		messages = append(messages, render(parent, withMetadata))
	}
	for _, m := range page {
		messages = append(messages, render(m, withMetadata))
	}
	more := start+len(page) < len(list)
	nextCursor := ""
	if more {
		nextCursor = base64.StdEncoding.EncodeToString([]byte("next_ts:" + list[start+len(page)].TS))
	}
	out := map[string]any{
		"ok": true, "messages": messages, "has_more": more,
		"response_metadata": map[string]any{"next_cursor": nextCursor},
	}
	if !replies {
		out["pin_count"] = 0
	}
	return out, "", nil
}

// parseTS reads a Slack timestamp ("1503435956.000247") as microseconds,
// def when empty.
func parseTS(v string, def int64) (int64, bool) {
	if v == "" {
		return def, true
	}
	secs, frac, _ := strings.Cut(v, ".")
	sec, err := strconv.ParseInt(secs, 10, 64)
	if err != nil || sec < 0 || len(frac) > 6 {
		return 0, false
	}
	micros := int64(0)
	if frac != "" {
		n, err := strconv.ParseInt((frac + "000000")[:6], 10, 64)
		if err != nil || n < 0 {
			return 0, false
		}
		micros = n
	}
	return sec*1_000_000 + micros, true
}

// info answers conversations.info (scope channels:read) with a channel
// AddChannel named, and users.info (scope users:read) with a user AddUser
// made; their arguments come form-encoded or in the query.
func (s *Server) info(w http.ResponseWriter, r *http.Request, method, token string, body []byte) {
	args := r.URL.Query()
	if form, err := url.ParseQuery(string(body)); err == nil {
		for k, v := range form {
			args[k] = v
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if method == "users.info" {
		if !s.authorize(w, token, "users:read") {
			return
		}
		id := args.Get("user")
		name, ok := s.users[id]
		if !ok {
			WriteError(w, "user_not_found")
			return
		}
		providertest.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "user": map[string]any{
			"id": id, "name": strings.ToLower(name), "profile": map[string]any{"display_name": name, "real_name": name},
		}})
		return
	}
	if !s.authorize(w, token, "channels:read") {
		return
	}
	id := args.Get("channel")
	for name, cid := range s.names {
		if cid == id {
			providertest.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "channel": map[string]any{"id": id, "name": strings.TrimPrefix(name, "#")}})
			return
		}
	}
	WriteError(w, "channel_not_found")
}

// update answers chat.update (JSON, scope chat:write): the stored message
// at channel and ts gets the new text.
func (s *Server) update(w http.ResponseWriter, r *http.Request, token string, body []byte) {
	var in struct {
		Channel string          `json:"channel"`
		TS      string          `json:"ts"`
		Text    string          `json:"text"`
		Blocks  json.RawMessage `json:"blocks"`
	}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") || json.Unmarshal(body, &in) != nil {
		WriteError(w, "invalid_json")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.authorize(w, token, "chat:write") {
		return
	}
	if _, ok := s.messages[in.Channel]; !ok {
		WriteError(w, "channel_not_found")
		return
	}
	m := s.find(in.Channel, in.TS)
	switch {
	case m == nil:
		WriteError(w, "message_not_found")
		return
	case in.Text == "" && len(in.Blocks) == 0:
		WriteError(w, "no_text")
		return
	}
	m.Text = in.Text
	providertest.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "channel": m.Channel, "ts": m.TS, "text": m.Text, "message": render(m, false)})
}

// triggerID is the format of a trigger_id ("12345.98765.abcd2358fdea").
var triggerID = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9a-f]+$`)

// openView answers views.open (JSON, or a form whose view is a JSON
// string; no scope needed) as Slack does: a trigger_id is exchanged once
// (invalid_trigger_id, exchanged_trigger_id), the view must be a modal
// within Slack's limits (invalid_arguments), and the answer is the view
// with its id, state and hash.
func (s *Server) openView(w http.ResponseWriter, r *http.Request, body []byte) {
	var in struct {
		TriggerID string          `json:"trigger_id"`
		View      json.RawMessage `json:"view"`
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		if json.Unmarshal(body, &in) != nil {
			WriteError(w, "invalid_json")
			return
		}
		// A JSON string holding the view is taken too.
		var str string
		if json.Unmarshal(in.View, &str) == nil {
			in.View = json.RawMessage(str)
		}
	} else {
		form, _ := url.ParseQuery(string(body))
		in.TriggerID, in.View = form.Get("trigger_id"), json.RawMessage(form.Get("view"))
	}
	var view map[string]any
	if json.Unmarshal(in.View, &view) != nil || view == nil {
		WriteError(w, "invalid_arguments")
		return
	}
	if !triggerID.MatchString(in.TriggerID) {
		WriteError(w, "invalid_trigger_id")
		return
	}
	if msg := checkModal(view); msg != "" {
		providertest.WriteJSON(w, http.StatusOK, map[string]any{"ok": false, "error": "invalid_arguments",
			"response_metadata": map[string]any{"messages": []string{msg}}})
		return
	}
	s.mu.Lock()
	if s.triggers[in.TriggerID] {
		s.mu.Unlock()
		WriteError(w, "exchanged_trigger_id")
		return
	}
	s.triggers[in.TriggerID] = true
	id := fmt.Sprintf("V%09d", len(s.views)+1)
	s.views = append(s.views, View{ID: id, TriggerID: in.TriggerID, View: view})
	s.mu.Unlock()

	out := maps.Clone(view)
	out["id"], out["team_id"], out["app_id"], out["bot_id"] = id, "T0TEAM0001", AppID, BotID
	out["state"] = map[string]any{"values": map[string]any{}}
	out["hash"] = fmt.Sprintf("%d.%s", time.Now().Unix(), strings.ToLower(id))
	out["root_view_id"], out["previous_view_id"] = id, nil
	out["clear_on_close"], out["notify_on_close"] = view["clear_on_close"] == true, view["notify_on_close"] == true
	for _, k := range []string{"private_metadata", "callback_id", "external_id"} {
		if _, ok := out[k]; !ok {
			out[k] = ""
		}
	}
	providertest.WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "view": out})
}

// checkModal returns what is wrong with a modal view by Slack's limits,
// "" when nothing.
func checkModal(view map[string]any) string {
	text := func(key string) (string, bool) {
		o, ok := view[key].(map[string]any)
		if !ok {
			return "", false
		}
		t, _ := o["text"].(string)
		return t, o["type"] == "plain_text"
	}
	blocks, _ := view["blocks"].([]any)
	hasInput := false
	for _, b := range blocks {
		if blk, _ := b.(map[string]any); blk["type"] == "input" {
			hasInput = true
		}
	}
	meta, _ := view["private_metadata"].(string)
	callback, _ := view["callback_id"].(string)
	title, titleOK := text("title")
	switch {
	case view["type"] != "modal":
		return "[ERROR] must be a modal [json-pointer:/view/type]"
	case !titleOK || title == "" || len([]rune(title)) > 24:
		return "[ERROR] must be plain_text of 1 to 24 characters [json-pointer:/view/title]"
	case blocks == nil || len(blocks) > 100:
		return "[ERROR] must have 1 to 100 blocks [json-pointer:/view/blocks]"
	case hasInput && view["submit"] == nil:
		return "[ERROR] submit is required with an input block [json-pointer:/view/submit]"
	case len([]rune(meta)) > 3000:
		return "[ERROR] must be at most 3000 characters [json-pointer:/view/private_metadata]"
	case len([]rune(callback)) > 255:
		return "[ERROR] must be at most 255 characters [json-pointer:/view/callback_id]"
	}
	for _, key := range []string{"submit", "close"} {
		if t, ok := text(key); view[key] != nil && (!ok || len([]rune(t)) > 24) {
			return "[ERROR] must be plain_text of at most 24 characters [json-pointer:/view/" + key + "]"
		}
	}
	return ""
}
