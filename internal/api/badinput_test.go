package api_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/internal/domain/invocation"
)

// badCase is one request that must be refused with a 4xx JSON error.
type badCase struct {
	name    string
	method  string
	path    string
	token   string
	body    any
	headers []string
	status  int
	// field, when set, must be named by the error (details.fields or the
	// message).
	field string
}

// corpusRoute is a route with a valid way to call it, so that a case can
// break exactly one thing.
type corpusRoute struct {
	method, path string
	token        string // allowed to call the route
	wrongKind    string // a token the route refuses, or ""
	body         any
}

// TestBadInput_Corpus sends every route malformed, mistyped, oversize and
// deeply nested bodies, NUL and invalid UTF-8 in every kind of text, huge
// and negative paging, forged, expired, alg:none and unstorable tokens,
// tokens of the wrong kind and another org's ids. Each must be a 4xx JSON
// error, and the database must be exactly as it was.
func TestBadInput_Corpus(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-corpus-token")

	// Objects of the org, none of which can run (approval is required), and
	// the same of another org.
	pending := b.Invoke("send_message", message).Body["invocation_id"].(string)
	env := postEnvelope(t, b, envelope("corpus-1", nil), http.StatusCreated)["action_id"].(string)
	r := b.Do("POST", "/v1/connectors", b.Owner(), map[string]any{"name": "corpus", "url": "https://mcp.example.com/mcp"})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	conn := r.Body["connector"].(map[string]any)["id"].(string)
	r = b.Do("POST", "/v1/databases", b.Owner(), map[string]any{"name": "corpus", "url": "postgres://reader:pw-corpus@db.example.com/app"})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	db := r.Body["database"].(map[string]any)["id"].(string)

	owner2 := b.Token(authClaims("org-2"))
	sandbox2 := b.Token(auth.Claims{Org: "org-2", Kind: auth.KindSandbox, SessionID: "session-2"})
	service2 := b.Token(auth.Claims{Org: "org-2", Kind: auth.KindService})
	require.Equal(t, http.StatusOK, b.Do("PUT", "/v1/credentials/slack", owner2, map[string]string{"token": "xoxb-org-2"}).Status)
	r = b.Do("POST", "/v1/sessions/session-2/actions/invoke", sandbox2, map[string]any{"integration": "slack", "action": "send_message", "params": message})
	require.Equal(t, http.StatusAccepted, r.Status, string(r.Raw))
	pending2 := r.Body["invocation_id"].(string)
	r = b.Do("POST", "/v1/envelopes", service2, envelope("corpus-2", nil))
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	env2 := r.Body["action_id"].(string)
	r = b.Do("POST", "/v1/connectors", owner2, map[string]any{"name": "corpus", "url": "https://mcp.example.com/mcp"})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	conn2 := r.Body["connector"].(map[string]any)["id"].(string)
	r = b.Do("POST", "/v1/databases", owner2, map[string]any{"name": "corpus", "url": "postgres://reader:pw-corpus@db.example.com/app"})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	db2 := r.Body["database"].(map[string]any)["id"].(string)

	hook := createDisabledWebhook(t, b, b.Owner())
	hook2 := createDisabledWebhook(t, b, owner2)

	before := databaseDigest(t, b)

	owner, admin, member, sandbox, service := b.Owner(), b.Admin(), b.Member(), b.Sandbox(), b.Service()
	tokens := badTokens(t, b)
	sess := "/v1/sessions/" + apptest.Session + "/actions"
	invokeBody := map[string]any{"integration": "slack", "action": "send_message", "params": message}
	routes := []corpusRoute{
		{"POST", sess + "/invoke", sandbox, service, invokeBody},
		{"GET", sess + "/available", sandbox, service, nil},
		{"GET", sess + "/guide/slack", sandbox, service, nil},
		{"GET", "/v1/actions/bootstrap-guide", sandbox, "", nil},
		{"GET", "/v1/actions/available", owner, sandbox, nil},
		{"GET", "/v1/sessions/" + apptest.Session + "/events", sandbox, service, nil},
		{"GET", "/v1/events", owner, sandbox, nil},
		{"GET", sess + "/invocations", sandbox, service, nil},
		{"GET", sess + "/invocations/" + pending, sandbox, service, nil},
		{"GET", sess + "/invocations/" + pending + "/events", sandbox, service, nil},
		{"GET", sess + "/invocations/" + pending + "/result-envelope", sandbox, service, nil},
		{"POST", sess + "/invocations/" + pending + "/approve", owner, member, map[string]string{"mode": "once"}},
		{"POST", sess + "/invocations/" + pending + "/deny", owner, member, map[string]string{"reason": "no"}},
		{"GET", "/v1/invocations", owner, sandbox, nil},
		{"GET", "/v1/invocations/" + pending, owner, "", nil},
		{"GET", "/v1/invocations/" + pending + "/events", owner, service, nil},
		{"GET", "/v1/invocations/" + pending + "/result-envelope", owner, service, nil},
		{"POST", "/v1/invocations/" + pending + "/approve", owner, sandbox, map[string]string{"mode": "once"}},
		{"POST", "/v1/invocations/" + pending + "/deny", owner, service, map[string]string{"reason": "no"}},
		{"GET", "/v1/action-modes", owner, sandbox, nil},
		{"PUT", "/v1/action-modes", owner, member, map[string]string{"slack:send_message": "deny"}},
		{"GET", "/v1/automations/automation-1/action-modes", owner, service, nil},
		{"PUT", "/v1/automations/automation-1/action-modes", owner, member, map[string]string{"slack:send_message": "deny"}},
		{"GET", "/v1/credentials", owner, sandbox, nil},
		{"PUT", "/v1/credentials/slack", owner, member, map[string]string{"token": "xoxb-replaced"}},
		{"GET", "/v1/connectors", owner, sandbox, nil},
		{"POST", "/v1/connectors", owner, member, map[string]any{"name": "new", "url": "https://mcp.example.com/new"}},
		{"GET", "/v1/connectors/" + conn, owner, sandbox, nil},
		{"PATCH", "/v1/connectors/" + conn, owner, member, map[string]any{"enabled": false}},
		{"DELETE", "/v1/connectors/" + conn, owner, member, nil},
		{"POST", "/v1/connectors/" + conn + "/validate", owner, member, nil},
		{"GET", "/v1/connectors/" + conn + "/tools", owner, sandbox, nil},
		{"PUT", "/v1/connectors/" + conn + "/tools", owner, member, map[string]string{}},
		{"GET", "/v1/databases", owner, sandbox, nil},
		{"POST", "/v1/databases", owner, member, map[string]any{"name": "new", "url": "postgres://reader:pw@db.example.com/new"}},
		{"GET", "/v1/databases/" + db, owner, sandbox, nil},
		{"PATCH", "/v1/databases/" + db, owner, member, map[string]any{"max_rows": 5}},
		{"DELETE", "/v1/databases/" + db, owner, member, nil},
		{"GET", "/v1/webhooks", owner, sandbox, nil},
		{"POST", "/v1/webhooks", owner, member, map[string]any{"url": "https://hooks.example.com/new", "events": []string{"action_completed"}}},
		{"GET", "/v1/webhooks/" + hook, owner, sandbox, nil},
		{"PATCH", "/v1/webhooks/" + hook, owner, member, map[string]any{"description": "changed"}},
		{"DELETE", "/v1/webhooks/" + hook, owner, member, nil},
		{"POST", "/v1/webhooks/" + hook + "/rotate-secret", owner, member, nil},
		{"GET", "/v1/webhooks/" + hook + "/deliveries", owner, sandbox, nil},
		{"GET", "/v1/notifications/slack", owner, sandbox, nil},
		{"PUT", "/v1/notifications/slack", owner, member, map[string]any{"channel": "C0123456789"}},
		{"GET", "/v1/approvers/slack", owner, sandbox, nil},
		{"PUT", "/v1/approvers/slack", owner, admin, map[string]any{"U0123": map[string]string{"user_id": "alice", "role": "admin"}}},
		{"GET", "/v1/quiet-hours", owner, sandbox, nil},
		{"PUT", "/v1/quiet-hours", owner, member, map[string]any{"windows": []any{}}},
		{"GET", "/v1/do-not-contact", owner, sandbox, nil},
		{"PUT", "/v1/do-not-contact", owner, member, map[string]any{"patterns": []string{}}},
		{"GET", "/v1/dead-letters", owner, sandbox, nil},
		{"POST", "/v1/dead-letters/retry", owner, member, map[string]any{"ids": []string{pending}}},
		{"POST", "/v1/dead-letters/discard", owner, member, map[string]any{"ids": []string{pending}}},
		{"POST", "/v1/dead-letters/" + pending + "/retry", owner, member, nil},
		{"POST", "/v1/dead-letters/" + pending + "/discard", owner, member, nil},
		{"GET", "/v1/queues", owner, sandbox, nil},
		{"POST", "/v1/queues/pause", owner, member, nil},
		{"POST", "/v1/queues/resume", owner, member, nil},
		{"GET", "/v1/stats", owner, member, nil},
		{"GET", "/v1/audit", owner, member, nil},
		{"GET", "/v1/audit/export", owner, member, nil},
		{"GET", "/v1/rate-buckets", owner, member, nil},
		{"POST", "/v1/envelopes", service, owner, envelope("corpus-new", nil)},
		{"GET", "/v1/envelopes/" + env, service, sandbox, nil},
		{"DELETE", "/v1/envelopes/" + env, service, member, nil},
	}

	var cases []badCase
	add := func(c badCase) { cases = append(cases, c) }
	// segment matches the path segments that are wildcards of the route.
	segment := regexp.MustCompile(`/(` + regexp.QuoteMeta(apptest.Session) + `|` + pending + `|` + env + `|` + conn +
		`|` + db + `|` + hook + `|slack|automation-1)(/|$)`)
	badSegments := []struct{ name, value string }{
		{"NUL", "%00"}, {"EmbeddedNUL", "a%00b"}, {"InvalidUTF8", "%FF"}, {"TruncatedUTF8", "%C3"},
		{"Overlong", "%C0%AF"}, {"Newline", "x%0Ay"}, {"TooLong", strings.Repeat("a", 300)},
	}
	for _, rt := range routes {
		name := rt.method + " " + rt.path
		for tokenName, tok := range tokens {
			add(badCase{name: name + "/" + tokenName, method: rt.method, path: rt.path, token: tok, body: rt.body, status: http.StatusUnauthorized})
		}
		add(badCase{name: name + "/NoToken", method: rt.method, path: rt.path, body: rt.body, status: http.StatusUnauthorized})
		if rt.wrongKind != "" {
			add(badCase{name: name + "/WrongKind", method: rt.method, path: rt.path, token: rt.wrongKind, body: rt.body, status: http.StatusForbidden})
		}
		add(badCase{name: name + "/QueryNUL", method: rt.method, path: rt.path + "?x=%00", token: rt.token, body: rt.body, status: http.StatusBadRequest, field: "x"})
		add(badCase{name: name + "/QueryNameInvalidUTF8", method: rt.method, path: rt.path + "?%FF=1", token: rt.token, body: rt.body, status: http.StatusBadRequest, field: "query"})
		add(badCase{name: name + "/QueryMalformed", method: rt.method, path: rt.path + "?a=%zz", token: rt.token, body: rt.body, status: http.StatusBadRequest, field: "query"})
		if strings.HasSuffix(rt.path, "s/slack") { // a literal path, no wildcard
			continue
		}
		for _, m := range segment.FindAllStringSubmatchIndex(rt.path, -1) {
			for _, bad := range badSegments {
				path := rt.path[:m[2]] + bad.value + rt.path[m[3]:]
				add(badCase{name: name + "/Path" + bad.name + "@" + rt.path[m[2]:m[3]], method: rt.method, path: path, token: rt.token, body: rt.body, status: http.StatusBadRequest})
			}
		}
	}

	// Another org's objects are not found.
	for _, c := range []badCase{
		{method: "GET", path: "/v1/invocations/" + pending2, token: owner},
		{method: "GET", path: "/v1/invocations/" + pending2, token: member},
		{method: "GET", path: "/v1/invocations/" + pending2, token: sandbox},
		{method: "GET", path: sess + "/invocations/" + pending2, token: sandbox},
		{method: "GET", path: "/v1/invocations/" + pending2 + "/events", token: owner},
		{method: "GET", path: sess + "/invocations/" + pending2 + "/events", token: sandbox},
		{method: "GET", path: "/v1/invocations/" + pending2 + "/result-envelope", token: owner},
		{method: "GET", path: "/v1/invocations/" + pending2 + "/result-envelope", token: sandbox},
		{method: "GET", path: sess + "/invocations/" + pending2 + "/result-envelope", token: sandbox},
		{method: "POST", path: "/v1/invocations/" + pending2 + "/approve", token: owner, body: map[string]string{"mode": "always"}},
		{method: "POST", path: "/v1/invocations/" + pending2 + "/deny", token: owner, body: map[string]string{"reason": "x"}},
		{method: "POST", path: sess + "/invocations/" + pending2 + "/approve", token: owner, body: map[string]string{"mode": "once"}},
		{method: "POST", path: "/v1/dead-letters/" + pending2 + "/retry", token: owner},
		{method: "POST", path: "/v1/dead-letters/" + pending2 + "/discard", token: owner},
		{method: "GET", path: "/v1/envelopes/" + env2, token: service},
		{method: "DELETE", path: "/v1/envelopes/" + env2, token: service},
		{method: "DELETE", path: "/v1/envelopes/" + env2, token: owner},
		{method: "GET", path: "/v1/connectors/" + conn2, token: owner},
		{method: "PATCH", path: "/v1/connectors/" + conn2, token: owner, body: map[string]any{"enabled": false}},
		{method: "DELETE", path: "/v1/connectors/" + conn2, token: owner},
		{method: "PUT", path: "/v1/connectors/" + conn2 + "/tools", token: owner, body: map[string]string{}},
		{method: "GET", path: "/v1/invocations/" + pending, token: owner2},
		{method: "GET", path: "/v1/databases/" + db2, token: owner},
		{method: "PATCH", path: "/v1/databases/" + db2, token: owner, body: map[string]any{"max_rows": 5}},
		{method: "DELETE", path: "/v1/databases/" + db2, token: owner},
		{method: "GET", path: "/v1/databases/" + db, token: owner2},
		{method: "GET", path: "/v1/webhooks/" + hook2, token: owner},
		{method: "PATCH", path: "/v1/webhooks/" + hook2, token: owner, body: map[string]any{"description": "x"}},
		{method: "DELETE", path: "/v1/webhooks/" + hook2, token: owner},
		{method: "POST", path: "/v1/webhooks/" + hook2 + "/rotate-secret", token: owner},
		{method: "GET", path: "/v1/webhooks/" + hook2 + "/deliveries", token: owner},
		{method: "GET", path: "/v1/webhooks/" + hook + "/deliveries", token: owner2},
		{method: "DELETE", path: "/v1/envelopes/" + env, token: service2},
	} {
		c.name = "OtherOrg/" + c.method + " " + c.path
		c.status = http.StatusNotFound
		add(c)
	}

	// Paging.
	for _, list := range []struct{ path, token string }{
		{"/v1/invocations", owner}, {sess + "/invocations", sandbox}, {"/v1/dead-letters", owner},
	} {
		for _, q := range []string{
			"offset=2147483648", "offset=9223372036854775807", "offset=99999999999999999999", "offset=-1",
			"offset=1e3", "offset=%00", "limit=101", "limit=-1", "limit=4294967296", "limit=0x10", "limit=%FF", "limit=%205",
		} {
			field := strings.Split(q, "=")[0]
			add(badCase{name: "Paging" + list.path + "?" + q, method: "GET", path: list.path + "?" + q, token: list.token, status: http.StatusBadRequest, field: field})
		}
	}
	// Event streams: the resume point and the filter.
	// A well-formed stream position no stream can have sent: its
	// transaction is beyond the present.
	futurePosition := (invocation.Cursor{XID: 1 << 50, ID: 1}).Position()
	var otherOrgEvent int64
	require.NoError(t, b.Pool.QueryRow(context.Background(), `SELECT max(id) FROM invocation_events WHERE organization_id = 'org-2'`).Scan(&otherOrgEvent))
	for _, stream := range []struct{ path, token string }{{"/v1/events", owner}, {"/v1/sessions/" + apptest.Session + "/events", sandbox}} {
		for _, q := range []string{
			"after=-1", "after=1e3", "after=99999999999999999999", "after=%FF", "after=" + fmt.Sprint(otherOrgEvent),
			"after=" + futurePosition,
			"types=action_started", "types=%00", "types=action_completed,",
		} {
			field := strings.Split(q, "=")[0]
			add(badCase{name: "Stream" + stream.path + "?" + q, method: "GET", path: stream.path + "?" + q, token: stream.token, status: http.StatusBadRequest, field: field})
		}
		for _, h := range []string{"-1", "x", "1\xff", "99999999999999999999", fmt.Sprint(otherOrgEvent), futurePosition} {
			add(badCase{name: "Stream" + stream.path + "/Last-Event-ID=" + h, method: "GET", path: stream.path, token: stream.token,
				headers: []string{"Last-Event-ID", h}, status: http.StatusBadRequest, field: "Last-Event-ID"})
		}
	}
	add(badCase{name: "StatusNUL", method: "GET", path: "/v1/invocations?status=pending%00", token: owner, status: http.StatusBadRequest, field: "status"})
	add(badCase{name: "StatusInvalidUTF8", method: "GET", path: "/v1/invocations?status=%FF", token: owner, status: http.StatusBadRequest, field: "status"})
	add(badCase{name: "StatusUnknown", method: "GET", path: "/v1/invocations?status=done", token: owner, status: http.StatusBadRequest, field: "status"})
	for _, q := range []string{"created_after=yesterday", "created_after=2026-11-21", "created_before=1700000000", "created_before=%00", "origin=api", "source=%FF", "session_id=a%00", "automation_id=" + strings.Repeat("a", 300)} {
		field := strings.Split(q, "=")[0]
		add(badCase{name: "Filter?" + q, method: "GET", path: "/v1/invocations?" + q, token: owner, status: http.StatusBadRequest, field: field})
	}
	add(badCase{name: "IdempotencyKeyInvalidUTF8", method: "POST", path: sess + "/invoke", token: sandbox, body: invokeBody,
		headers: []string{"Idempotency-Key", "k\xff"}, status: http.StatusBadRequest, field: "Idempotency-Key"})
	add(badCase{name: "IdempotencyKeyTooLong", method: "POST", path: sess + "/invoke", token: sandbox, body: invokeBody,
		headers: []string{"Idempotency-Key", strings.Repeat("k", 300)}, status: http.StatusBadRequest})

	// Bodies: each breaks one thing of a request that would otherwise be
	// accepted.
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	nested := strings.Repeat(`{"a":`, 5000) + "1" + strings.Repeat("}", 5000)
	huge := `"` + strings.Repeat("a", (1<<20)+1) + `"`
	type bodyCase struct {
		name  string
		body  string
		field string
	}
	bodyRoutes := []struct {
		method, path, token string
		cases               []bodyCase
	}{
		{"POST", sess + "/invoke", sandbox, []bodyCase{
			{"ParamsTextNUL", `{"integration":"slack","action":"send_message","params":{"channel":"C1","text":"a\u0000b"}}`, "params.text"},
			{"ParamsKeyNUL", `{"integration":"slack","action":"send_message","params":{"channel":"C1","text":"hi","x\u0000":1}}`, "params"},
			{"ParamsInvalidUTF8", "{\"integration\":\"slack\",\"action\":\"send_message\",\"params\":{\"channel\":\"C1\",\"text\":\"a\xffb\"}}", "params.text"},
			{"ParamsNestedNUL", `{"integration":"slack","action":"send_message","params":{"channel":"C1","text":"hi","blocks":[{"t":["\u0000"]}]}}`, "params.blocks[0].t[0]"},
			{"IntegrationNUL", `{"integration":"sla\u0000ck","action":"send_message","params":{"channel":"C1","text":"hi"}}`, "integration"},
			{"ActionInvalidUTF8", "{\"integration\":\"slack\",\"action\":\"send\xc3_message\",\"params\":{\"channel\":\"C1\",\"text\":\"hi\"}}", "action"},
			{"UnknownFieldNUL", `{"integ\u0000ration":"slack"}`, ""},
			{"IntegrationNumber", `{"integration":1,"action":"send_message","params":{}}`, ""},
			{"ParamsString", `{"integration":"slack","action":"send_message","params":"channel=C1"}`, ""},
			{"ChannelArray", `{"integration":"slack","action":"send_message","params":{"channel":["C1"],"text":"hi"}}`, ""},
			{"DeepParams", `{"integration":"slack","action":"send_message","params":{"channel":` + deep + `,"text":"hi"}}`, ""},
			{"NestedParams", `{"integration":"slack","action":"send_message","params":{"channel":` + nested + `,"text":"hi"}}`, ""},
			{"Oversize", `{"integration":"slack","action":"send_message","params":{"channel":"C1","text":` + huge + `}}`, ""},
			{"Array", `[]`, ""}, {"Null", `null`, ""}, {"Empty", ``, ""}, {"Truncated", `{"integration":`, ""}, {"Trailing", `{} {}`, ""},
			{"BareNUL", "{\"integration\":\"slack\x00\"}", ""},
			{"ParamsLoneHighSurrogate", `{"integration":"slack","action":"send_message","params":{"channel":"C1","text":"a\ud800b"}}`, "params.text"},
			{"ParamsLoneLowSurrogate", `{"integration":"slack","action":"send_message","params":{"channel":"C1","text":"\uDC00\uD800"}}`, "params.text"},
			{"ParamsHighSurrogateAtEnd", `{"integration":"slack","action":"send_message","params":{"channel":"C1","text":"\\\ud83d"}}`, "params.text"},
			{"ParamsKeyLoneSurrogate", `{"integration":"slack","action":"send_message","params":{"channel":"C1","text":"hi","\ud83d":1}}`, "params"},
			{"IntegrationLoneSurrogate", `{"integration":"slack\udfff","action":"send_message","params":{"channel":"C1","text":"hi"}}`, "integration"},
			{"IssueNumberExponent", `{"integration":"github","action":"comment_on_issue","params":{"owner":"o","repo":"r","issue_number":1e30,"body":"hi"}}`, "issue_number"},
			{"IssueNumberFraction", `{"integration":"github","action":"comment_on_issue","params":{"owner":"o","repo":"r","issue_number":2.0,"body":"hi"}}`, "issue_number"},
			{"IssueNumberBeyondExact", `{"integration":"github","action":"comment_on_issue","params":{"owner":"o","repo":"r","issue_number":9007199254740992,"body":"hi"}}`, "issue_number"},
		}},
		{"POST", "/v1/envelopes", service, []bodyCase{
			{"ExternalIDNUL", `{"external_id":"e\u0000","tool":{"source":"slack","action":"send_message"},"args":{"channel":"C1","text":"t"}}`, "external_id"},
			{"ExternalIDInvalidUTF8", "{\"external_id\":\"e\xff\",\"tool\":{\"source\":\"slack\",\"action\":\"send_message\"},\"args\":{\"channel\":\"C1\",\"text\":\"t\"}}", "external_id"},
			{"ExternalIDTooLong", `{"external_id":"` + strings.Repeat("e", 300) + `","tool":{"source":"slack","action":"send_message"},"args":{"channel":"C1","text":"t"}}`, "external_id"},
			{"ToolSourceNUL", `{"external_id":"e1","tool":{"source":"slack\u0000","action":"send_message"},"args":{"channel":"C1","text":"t"}}`, "tool.source"},
			{"ToolNameNUL", `{"external_id":"e1","tool":{"name":"slack.send\u0000"},"args":{"channel":"C1","text":"t"}}`, "tool.name"},
			{"ArgsNUL", `{"external_id":"e1","tool":{"source":"slack","action":"send_message"},"args":{"channel":"C1","text":"\u0000"}}`, "args.text"},
			{"ArgsLoneSurrogate", `{"external_id":"e1","tool":{"source":"slack","action":"send_message"},"args":{"channel":"C1","text":"\ud800\u0041"}}`, "args.text"},
			{"ExternalIDLoneSurrogate", `{"external_id":"e\udc00","tool":{"source":"slack","action":"send_message"},"args":{"channel":"C1","text":"t"}}`, "external_id"},
			{"ArgsIssueNumberExponent", `{"external_id":"e1","tool":{"source":"github","action":"comment_on_issue"},"args":{"owner":"o","repo":"r","issue_number":1e30,"body":"hi"}}`, "issue_number"},
			{"ArgsKeyInvalidUTF8", "{\"external_id\":\"e1\",\"tool\":{\"source\":\"slack\",\"action\":\"send_message\"},\"args\":{\"channel\":\"C1\",\"text\":\"t\",\"\xfe\":1}}", "args"},
			{"RiskNUL", `{"external_id":"e1","tool":{"source":"slack","action":"send_message"},"args":{"channel":"C1","text":"t"},"risk":"low\u0000"}`, "risk"},
			{"AutomationNUL", `{"external_id":"e1","tool":{"source":"slack","action":"send_message"},"args":{"channel":"C1","text":"t"},"automation_id":"a\u0000"}`, "automation_id"},
			{"BucketNUL", `{"external_id":"e1","tool":{"source":"slack","action":"send_message"},"args":{"channel":"C1","text":"t"},"constraints":{"rate_bucket":"slack\u0000"}}`, "constraints.rate_bucket"},
			{"MustRunBeforeNUL", `{"external_id":"e1","tool":{"source":"slack","action":"send_message"},"args":{"channel":"C1","text":"t"},"constraints":{"must_run_before":"2030-01-01T00:00:00Z\u0000"}}`, "constraints.must_run_before"},
			{"IgnoredFieldNUL", `{"external_id":"e1","tool":{"source":"slack","action":"send_message"},"args":{"channel":"C1","text":"t"},"tenant_id":"\u0000"}`, "tenant_id"},
			{"ExternalIDNumber", `{"external_id":5,"tool":{"source":"slack","action":"send_message"},"args":{}}`, ""},
			{"ToolString", `{"external_id":"e1","tool":"slack.send_message","args":{}}`, ""},
			{"RetryNegative", `{"external_id":"e1","tool":{"source":"slack","action":"send_message"},"args":{"channel":"C1","text":"t"},"constraints":{"retry":{"max_attempts":-1}}}`, ""},
			{"RetryHuge", `{"external_id":"e1","tool":{"source":"slack","action":"send_message"},"args":{"channel":"C1","text":"t"},"constraints":{"retry":{"max_attempts":99999999999999999999}}}`, ""},
			{"MustRunBeforeGarbage", `{"external_id":"e1","tool":{"source":"slack","action":"send_message"},"args":{"channel":"C1","text":"t"},"constraints":{"must_run_before":"tomorrow"}}`, ""},
			{"DeepArgs", `{"external_id":"e1","tool":{"source":"slack","action":"send_message"},"args":` + deep + `}`, ""},
			{"Oversize", `{"external_id":"e1","tool":{"source":"slack","action":"send_message"},"args":{"channel":"C1","text":` + huge + `}}`, ""},
			{"Null", `null`, ""}, {"Empty", ``, ""}, {"Truncated", `{"external_id":"e`, ""},
		}},
		{"PUT", "/v1/action-modes", owner, []bodyCase{
			{"KeyNUL", `{"slack:send_\u0000message":"allow"}`, `"slack:send_\x00message"`},
			{"KeyInvalidUTF8", "{\"slack:send\xff\":\"allow\"}", ""},
			{"ValueNUL", `{"slack:send_message":"allow\u0000"}`, "slack:send_message"},
			{"ValueLoneSurrogate", `{"slack:send_message":"allow\ud800"}`, "slack:send_message"},
			{"ValueNumber", `{"slack:send_message":1}`, ""},
			{"KeyTooLong", `{"slack:` + strings.Repeat("a", 5000) + `":"deny"}`, "slack:"},
			{"Array", `["allow"]`, ""}, {"Null", `null`, ""}, {"Empty", ``, ""},
			{"Oversize", `{"a:b":` + huge + `}`, ""},
			{"Deep", `{"a:b":` + deep + `}`, ""},
		}},
		{"PUT", "/v1/automations/automation-1/action-modes", owner, []bodyCase{
			{"KeyNUL", `{"\u0000:x":"deny"}`, ""},
			{"ValueInvalidUTF8", "{\"slack:send_message\":\"deny\xff\"}", "slack:send_message"},
		}},
		{"PUT", "/v1/credentials/slack", owner, []bodyCase{
			{"UserIDNUL", `{"token":"xoxb-1","user_id":"u\u0000"}`, "user_id"},
			{"UserIDInvalidUTF8", "{\"token\":\"xoxb-1\",\"user_id\":\"u\xff\"}", "user_id"},
			{"TokenNUL", `{"token":"xoxb\u0000"}`, "token"},
			{"TokenKindNUL", `{"token":"xoxb-1","token_kind":"oauth\u0000"}`, "token_kind"},
			{"TokenNumber", `{"token":123}`, ""},
			{"UserIDTooLong", `{"token":"xoxb-1","user_id":"` + strings.Repeat("u", 5000) + `"}`, "user_id"},
			{"Unknown", `{"token":"x","extra":1}`, ""},
			{"Empty", ``, ""},
		}},
		{"POST", "/v1/connectors", owner, []bodyCase{
			{"NameNUL", `{"name":"c\u0000","url":"https://mcp.example.com/x"}`, "name"},
			{"NameInvalidUTF8", "{\"name\":\"c\xff\",\"url\":\"https://mcp.example.com/x\"}", "name"},
			{"URLNUL", `{"name":"c","url":"https://mcp.example.com/\u0000"}`, "url"},
			{"SecretNUL", `{"name":"c","url":"https://mcp.example.com/x","auth":{"type":"bearer","secret":"s\u0000"}}`, "auth.secret"},
			{"HeaderNameNUL", `{"name":"c","url":"https://mcp.example.com/x","auth":{"type":"custom_header","header_name":"X\u0000","secret":"s"}}`, "auth.header_name"},
			{"URLTooLong", `{"name":"c","url":"https://mcp.example.com/` + strings.Repeat("a", 100<<10) + `"}`, "url"},
			{"SecretCRLF", `{"name":"c","url":"https://mcp.example.com/x","auth":{"type":"bearer","secret":"s\r\nX-Injected: 1"}}`, "auth.secret"},
			{"HeaderSecretLF", `{"name":"c","url":"https://mcp.example.com/x","auth":{"type":"custom_header","header_name":"X-Api-Key","secret":"a\nb"}}`, "auth.secret"},
			{"HeaderSecretDEL", `{"name":"c","url":"https://mcp.example.com/x","auth":{"type":"custom_header","header_name":"X-Api-Key","secret":"a\u007fb"}}`, "auth.secret"},
			{"HeaderNameCRLF", `{"name":"c","url":"https://mcp.example.com/x","auth":{"type":"custom_header","header_name":"X-A\r\nX-B","secret":"s"}}`, "auth.header_name"},
			{"RiskPolicyToolNUL", `{"name":"c","url":"https://mcp.example.com/x","risk_policy":{"tools":{"t\u0000":"read"}}}`, "risk_policy.tools"},
			{"NameTooLong", `{"name":"` + strings.Repeat("n", 300) + `","url":"https://mcp.example.com/x"}`, "name"},
			{"EnabledString", `{"name":"c","url":"https://mcp.example.com/x","enabled":"yes"}`, ""},
			{"BadTransport", `{"name":"c","url":"https://mcp.example.com/x","transport":"stdio"}`, ""},
			{"Null", `null`, ""},
		}},
		{"POST", "/v1/databases", owner, []bodyCase{
			{"NameNUL", `{"name":"d\u0000","url":"postgres://u:p@db.example.com/app"}`, "name"},
			{"NameMissing", `{"url":"postgres://u:p@db.example.com/app"}`, "name"},
			{"NameTooLong", `{"name":"` + strings.Repeat("n", 300) + `","url":"postgres://u:p@db.example.com/app"}`, "name"},
			{"URLMissing", `{"name":"d"}`, "url"},
			{"URLTooLong", `{"name":"d","url":"postgres://u:p@db.example.com/app?application_name=` + strings.Repeat("a", 100<<10) + `"}`, "url"},
			{"URLNUL", `{"name":"d","url":"postgres://u:p@db.example.com/app\u0000"}`, "url"},
			{"URLInvalidUTF8", "{\"name\":\"d\",\"url\":\"postgres://u:p@db.example.com/\xff\"}", "url"},
			{"URLScheme", `{"name":"d","url":"mysql://u:p@db.example.com/app"}`, "url"},
			{"URLNoUser", `{"name":"d","url":"postgres://db.example.com/app"}`, "url"},
			{"URLNoDatabase", `{"name":"d","url":"postgres://u:p@db.example.com"}`, "url"},
			{"URLUnixSocket", `{"name":"d","url":"postgres://u:p@%2Fvar%2Frun%2Fpostgresql/app"}`, "url"},
			{"URLFileParam", `{"name":"d","url":"postgres://u:p@db.example.com/app?sslrootcert=/etc/passwd"}`, "url"},
			{"URLExecMode", `{"name":"d","url":"postgres://u:p@db.example.com/app?default_query_exec_mode=simple_protocol"}`, "url"},
			{"URLNumber", `{"name":"d","url":5}`, ""},
			{"TimeoutGarbage", `{"name":"d","url":"postgres://u:p@db.example.com/app","statement_timeout":"soon"}`, "statement_timeout"},
			{"TimeoutZero", `{"name":"d","url":"postgres://u:p@db.example.com/app","statement_timeout":"0s"}`, "statement_timeout"},
			{"TimeoutHuge", `{"name":"d","url":"postgres://u:p@db.example.com/app","statement_timeout":"2h"}`, "statement_timeout"},
			{"TimeoutNumber", `{"name":"d","url":"postgres://u:p@db.example.com/app","statement_timeout":5000}`, ""},
			{"MaxRowsZero", `{"name":"d","url":"postgres://u:p@db.example.com/app","max_rows":0}`, "max_rows"},
			{"MaxRowsHuge", `{"name":"d","url":"postgres://u:p@db.example.com/app","max_rows":99999999999}`, ""},
			{"MaxRowsTooMany", `{"name":"d","url":"postgres://u:p@db.example.com/app","max_rows":10001}`, "max_rows"},
			{"MaxRowsFraction", `{"name":"d","url":"postgres://u:p@db.example.com/app","max_rows":1.5}`, ""},
			{"Unknown", `{"name":"d","url":"postgres://u:p@db.example.com/app","password":"x"}`, ""},
			{"Duplicate", `{"name":"corpus","url":"postgres://u:p@db.example.com/app"}`, ""},
			{"Null", `null`, ""}, {"Empty", ``, ""},
		}},
		{"PATCH", "/v1/databases/" + db, owner, []bodyCase{
			{"NameEmpty", `{"name":" "}`, "name"},
			{"URLEmpty", `{"url":""}`, "url"},
			{"URLTooLong", `{"url":"postgres://u:p@db.example.com/` + strings.Repeat("a", 3000) + `"}`, "url"},
			{"URLBad", `{"url":"postgres://u:p@db.example.com/app?options=-c%20statement_timeout%3D0"}`, "url"},
			{"MaxRowsNegative", `{"max_rows":-1}`, "max_rows"},
			{"TimeoutTiny", `{"statement_timeout":"1ms"}`, "statement_timeout"},
		}},
		{"POST", "/v1/webhooks", owner, []bodyCase{
			{"URLNUL", `{"url":"https://hooks.example.com/\u0000","events":["action_completed"]}`, "url"},
			{"URLMissing", `{"events":["action_completed"]}`, "url"},
			{"URLScheme", `{"url":"ftp://hooks.example.com/","events":["action_completed"]}`, "url"},
			{"URLTooLong", `{"url":"https://hooks.example.com/` + strings.Repeat("a", 3000) + `","events":["action_completed"]}`, "url"},
			{"EventsEmpty", `{"url":"https://hooks.example.com/","events":[]}`, "events"},
			{"EventUnknown", `{"url":"https://hooks.example.com/","events":["action_completed","started"]}`, "events[1]"},
			{"EventNUL", `{"url":"https://hooks.example.com/","events":["action_completed\u0000"]}`, "events[0]"},
			{"DescriptionInvalidUTF8", "{\"url\":\"https://hooks.example.com/\",\"events\":[\"action_completed\"],\"description\":\"\xff\"}", "description"},
			{"EnabledOnCreate", `{"url":"https://hooks.example.com/","events":["action_completed"],"enabled":false}`, "enabled"},
			{"Unknown", `{"url":"https://hooks.example.com/","events":["action_completed"],"secret":"mine"}`, ""},
			{"Null", `null`, ""},
		}},
		{"PATCH", "/v1/webhooks/" + hook, owner, []bodyCase{
			{"URLNUL", `{"url":"https://hooks.example.com/\u0000"}`, "url"},
			{"EventsEmpty", `{"events":[]}`, "events"},
			{"EnabledString", `{"enabled":"yes"}`, ""},
		}},
		{"PUT", "/v1/notifications/slack", owner, []bodyCase{
			{"ChannelNUL", `{"channel":"C0\u0000"}`, "channel"},
			{"ChannelEmpty", `{"channel":""}`, "channel"},
			{"ChannelNumber", `{"channel":5}`, ""},
		}},
		{"PUT", "/v1/approvers/slack", owner, []bodyCase{
			{"RoleMember", `{"U0123":{"user_id":"bob","role":"member"}}`, "U0123.role"},
			{"UserIDMissing", `{"U0123":{"role":"admin"}}`, "U0123.user_id"},
			{"UserIDNUL", `{"U0123":{"user_id":"b\u0000","role":"admin"}}`, "U0123.user_id"},
			{"KeyInvalidUTF8", "{\"U\xff\":{\"user_id\":\"b\",\"role\":\"admin\"}}", ""},
			{"NotObject", `{"U0123":"alice"}`, "U0123"},
			{"UnknownField", `{"U0123":{"user_id":"bob","role":"admin","usr_id":"carol"}}`, "U0123"},
			{"Array", `[]`, ""},
		}},
		{"PATCH", "/v1/connectors/" + conn, owner, []bodyCase{
			{"NameNUL", `{"name":"c\u0000"}`, "name"},
			{"URLInvalidUTF8", "{\"url\":\"https://mcp.example.com/\xff\"}", "url"},
			{"URLTooLong", `{"url":"https://mcp.example.com/` + strings.Repeat("a", 2100) + `"}`, "url"},
			{"SecretCR", `{"auth":{"type":"bearer","secret":"s\r"}}`, "auth.secret"},
		}},
		{"PUT", "/v1/connectors/" + conn + "/tools", owner, []bodyCase{
			{"ToolNUL", `{"t\u0000":"allow"}`, ""},
			{"ModeInvalidUTF8", "{\"t\":\"allow\xff\"}", "t"},
			{"Null", `null`, ""},
		}},
		{"PUT", "/v1/quiet-hours", owner, []bodyCase{
			{"TimeZoneNUL", `{"windows":[{"bucket":"","time_zone":"Europe/Paris\u0000","start":"22:00","end":"07:00"}]}`, "windows[0].time_zone"},
			{"BucketInvalidUTF8", "{\"windows\":[{\"bucket\":\"\xff\",\"time_zone\":\"UTC\",\"start\":\"22:00\",\"end\":\"07:00\"}]}", "windows[0].bucket"},
			{"StartNUL", `{"windows":[{"bucket":"","time_zone":"UTC","start":"22:00\u0000","end":"07:00"}]}`, "windows[0].start"},
			{"BadZone", `{"windows":[{"bucket":"","time_zone":"Mars/Olympus","start":"22:00","end":"07:00"}]}`, ""},
			{"BadTime", `{"windows":[{"bucket":"","time_zone":"UTC","start":"25:00","end":"07:00"}]}`, ""},
			{"WindowsObject", `{"windows":{}}`, ""},
		}},
		{"PUT", "/v1/do-not-contact", owner, []bodyCase{
			{"PatternNUL", `{"patterns":["#general","C0\u0000*"]}`, "patterns[1]"},
			{"PatternInvalidUTF8", "{\"patterns\":[\"\xc3\"]}", "patterns[0]"},
			{"PatternTooLong", `{"patterns":["` + strings.Repeat("p", 300) + `"]}`, ""},
			{"PatternsString", `{"patterns":"#general"}`, ""},
		}},
		{"POST", "/v1/dead-letters/retry", owner, []bodyCase{
			{"IDNUL", `{"ids":["\u0000"]}`, "ids[0]"},
			{"IDInvalidUTF8", "{\"ids\":[\"\xff\"]}", "ids[0]"},
			{"NoIDs", `{"ids":[]}`, ""},
			{"IDsString", `{"ids":"x"}`, ""},
		}},
		{"POST", "/v1/dead-letters/discard", owner, []bodyCase{
			{"IDNUL", `{"ids":["` + pending + `\u0000"]}`, "ids[0]"},
			{"TooManyIDs", `{"ids":[` + strings.Repeat(`"x",`, 1000) + `"x"]}`, ""},
		}},
		{"POST", "/v1/invocations/" + pending + "/deny", owner, []bodyCase{
			{"ReasonNUL", `{"reason":"no\u0000"}`, "reason"},
			{"ReasonInvalidUTF8", "{\"reason\":\"no\xff\"}", "reason"},
			{"ReasonTooLong", `{"reason":"` + strings.Repeat("r", 2001) + `"}`, ""},
		}},
		{"POST", "/v1/invocations/" + pending + "/approve", owner, []bodyCase{
			{"ModeNUL", `{"mode":"once\u0000"}`, "mode"},
			{"ModeInvalidUTF8", "{\"mode\":\"always\xff\"}", "mode"},
		}},
	}
	for _, br := range bodyRoutes {
		for _, bc := range br.cases {
			status := http.StatusBadRequest
			switch {
			case bc.name == "Oversize":
				status = http.StatusRequestEntityTooLarge
			case bc.name == "Duplicate":
				status = http.StatusConflict
			}
			add(badCase{name: "Body/" + br.method + " " + br.path + "/" + bc.name, method: br.method, path: br.path,
				token: br.token, body: []byte(bc.body), status: status, field: bc.field})
		}
	}

	require.GreaterOrEqual(t, len(cases), 200)
	t.Logf("%d bad requests", len(cases))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := b.Do(c.method, c.path, c.token, c.body, c.headers...)
			require.Equal(t, c.status, r.Status, string(r.Raw))
			require.Contains(t, r.Header.Get("Content-Type"), "application/json")
			e, ok := r.Body["error"].(map[string]any)
			require.True(t, ok, "no error object in %s", r.Raw)
			require.NotEmpty(t, e["code"])
			require.NotEmpty(t, e["message"])
			if c.field != "" {
				if details, ok := e["details"].(map[string]any); ok && details["fields"] != nil {
					names := fieldNames(t, e)
					require.True(t, slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, c.field) }),
						"%q does not name %q", names, c.field)
				} else {
					require.Contains(t, e["message"], c.field, string(r.Raw))
				}
			}
		})
	}

	require.Equal(t, before, databaseDigest(t, b), "a refused request changed the database")
	require.Len(t, b.Slack.Requests(), 0)
}

// badTokens are tokens every route refuses with 401, by name.
func badTokens(t *testing.T, b *apptest.Bundle) map[string]string {
	t.Helper()
	owner := auth.Claims{Org: apptest.Org, Kind: auth.KindUser, Role: auth.RoleOwner, RegisteredClaims: jwt.RegisteredClaims{Subject: "owner"}}
	expired, err := auth.Mint(b.Secret, owner, -time.Hour)
	require.NoError(t, err)
	forged, err := auth.Mint("another-secret-0123456789abcdef", owner, time.Hour)
	require.NoError(t, err)
	withExp := owner
	withExp.ExpiresAt = jwt.NewNumericDate(time.Now().Add(time.Hour))
	algNone, err := jwt.NewWithClaims(jwt.SigningMethodNone, withExp).SignedString(jwt.UnsafeAllowNoneSignatureType)
	require.NoError(t, err)
	sign := func(claims jwt.MapClaims) string {
		claims["exp"] = time.Now().Add(time.Hour).Unix()
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(b.Secret))
		require.NoError(t, err)
		return tok
	}
	return map[string]string{
		"Expired":     expired,
		"Forged":      forged,
		"AlgNone":     algNone,
		"Garbage":     "not.a.token",
		"OrgNUL":      sign(jwt.MapClaims{"org": apptest.Org + "\x00", "sub": "x", "kind": "user", "role": "owner"}),
		"SubNUL":      sign(jwt.MapClaims{"org": apptest.Org, "sub": "x\x00", "kind": "user", "role": "owner"}),
		"SessionNUL":  sign(jwt.MapClaims{"org": apptest.Org, "sub": "x", "kind": "sandbox", "session_id": apptest.Session + "\x00"}),
		"AutomationN": sign(jwt.MapClaims{"org": apptest.Org, "sub": "x", "kind": "service", "automation_id": "a\x00"}),
		"UserIDNUL":   sign(jwt.MapClaims{"org": apptest.Org, "sub": "x", "kind": "service", "user_id": "\x00"}),
		"SourcesNUL":  sign(jwt.MapClaims{"org": apptest.Org, "sub": "x", "kind": "service", "sources": []string{"slack\x00"}}),
		"OrgTooLong":  sign(jwt.MapClaims{"org": strings.Repeat("o", 300), "sub": "x", "kind": "user", "role": "owner"}),
	}
}

// databaseDigest fingerprints every outboxd table, River's jobs (but the
// periodic sweep's) and River's queues (their names and pause state; River
// keeps touching the rest).
// createDisabledWebhook creates a webhook and disables it, so that nothing
// is delivered to it while the corpus runs.
func createDisabledWebhook(t *testing.T, b *apptest.Bundle, token string) string {
	t.Helper()
	r := b.Do("POST", "/v1/webhooks", token, map[string]any{"url": "https://hooks.example.com/corpus", "events": []string{"action_completed"}})
	require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
	id := r.Body["webhook"].(map[string]any)["id"].(string)
	r = b.Do("PATCH", "/v1/webhooks/"+id, token, map[string]any{"enabled": false})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	return id
}

func databaseDigest(t *testing.T, b *apptest.Bundle) map[string]string {
	t.Helper()
	ctx := context.Background()
	rows, err := b.Pool.Query(ctx, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'
		  AND (table_name NOT LIKE 'river%' OR table_name = 'river_job')
		  AND table_name NOT IN ('relay_cursors', 'invocation_previews')`)
	require.NoError(t, err)
	var tables []string
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		tables = append(tables, name)
	}
	require.NoError(t, rows.Err())
	sort.Strings(tables)
	require.Contains(t, tables, "action_invocations")
	require.Contains(t, tables, "river_job")

	digest := map[string]string{}
	for _, table := range tables {
		// The periodic sweep, retention and relays insert their own jobs
		// whenever due; the previews of invocations created before are
		// rendered by jobs of their own at any moment (they, and the
		// previews they write, follow an invocation: action_invocations
		// tells one that should not be).
		where := ""
		if table == "river_job" {
			where = ` WHERE kind NOT IN ('expire_sweep', 'relay', 'retention', 'render_preview')`
		}
		var sum string
		require.NoError(t, b.Pool.QueryRow(ctx, fmt.Sprintf(
			`SELECT count(*) || ':' || coalesce(md5(string_agg(t::text, '|' ORDER BY t::text)), '') FROM %q t%s`, table, where)).Scan(&sum))
		digest[table] = sum
	}
	var queues string
	require.NoError(t, b.Pool.QueryRow(ctx,
		`SELECT coalesce(string_agg(name || '=' || coalesce(paused_at::text, ''), ',' ORDER BY name), '') FROM river_queue`).Scan(&queues))
	digest["river_queue"] = queues
	return digest
}
