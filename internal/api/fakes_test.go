package api_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
)

// fakeLinear is a loopback Linear GraphQL API over in-memory issues and
// comments keyed by id. It dispatches on the root field a document selects
// and answers in Linear's shapes: payloads with success flags, connections
// with pageInfo and opaque cursors, errors arrays with extensions. Like
// Linear, it refuses a create whose client-chosen id is taken.
type fakeLinear struct {
	server *httptest.Server

	mu       sync.Mutex
	accept   func(authorization string) bool
	issues   map[string]map[string]any
	order    []string
	comments map[string]map[string]any
	calls    []linearCall
	// hangCreates is how many issue creates take effect and then never
	// answer, as when the answer is lost to a timeout.
	hangCreates int
	// intercept, when set, may answer a call in place of the workspace; it
	// returns false to let the workspace answer.
	intercept func(w http.ResponseWriter, call linearCall) bool
}

// linearCall is what the fake saw of one request.
type linearCall struct {
	Authorization string
	Operation     string
	Query         string
	Variables     map[string]any
}

func newFakeLinear(t testing.TB) *fakeLinear {
	f := &fakeLinear{issues: map[string]map[string]any{}, comments: map[string]map[string]any{}}
	f.server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.server.Close)
	return f
}

// URL is the GraphQL endpoint.
func (f *fakeLinear) URL() string { return f.server.URL + "/graphql" }

// acceptOnly lets in only requests with one of these Authorization values.
func (f *fakeLinear) acceptOnly(authorizations ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.accept = func(a string) bool { return slices.Contains(authorizations, a) }
}

func (f *fakeLinear) hangNextCreate() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hangCreates++
}

func (f *fakeLinear) recorded() []linearCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fakeLinear) issueCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.issues)
}

func (f *fakeLinear) comment(id string) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.comments[id]
}

// seedIssue stores an issue as if created in Linear's UI and returns its id.
func (f *fakeLinear) seedIssue(teamID, title string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.insertIssue(uuid.NewString(), map[string]any{"teamId": teamID, "title": title})
}

func (f *fakeLinear) insertIssue(id string, in map[string]any) string {
	n := len(f.order) + 1
	created := time.Date(2025, 3, 1, 9, n, 0, 0, time.UTC).Format(time.RFC3339Nano)
	identifier := fmt.Sprintf("ENG-%d", n)
	f.issues[id] = map[string]any{
		"id": id, "identifier": identifier, "title": in["title"], "description": in["description"],
		"priority": orDefault(in["priority"], 0), "priorityLabel": "No priority",
		"url":       "https://linear.app/acme/issue/" + identifier,
		"createdAt": created, "updatedAt": created,
		"state":    map[string]any{"id": "state-todo", "name": "Todo", "type": "unstarted"},
		"assignee": nil,
		"team":     map[string]any{"id": in["teamId"], "key": "ENG", "name": "Engineering"},
		"project":  nil,
		"labels":   map[string]any{"nodes": []any{}},
	}
	f.order = append(f.order, id)
	return id
}

func (f *fakeLinear) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/graphql" {
		http.NotFound(w, r)
		return
	}
	var body struct {
		Query         string         `json:"query"`
		OperationName string         `json:"operationName"`
		Variables     map[string]any `json:"variables"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Query == "" {
		writeJSONAnswer(w, http.StatusBadRequest, linearError("GRAPHQL_PARSE_FAILED", "Must provide query string."))
		return
	}
	call := linearCall{Authorization: r.Header.Get("Authorization"), Operation: body.OperationName, Query: body.Query, Variables: body.Variables}

	f.mu.Lock()
	f.calls = append(f.calls, call)
	intercept, accept := f.intercept, f.accept
	f.mu.Unlock()
	if intercept != nil && intercept(w, call) {
		return
	}
	if call.Authorization == "" || (accept != nil && !accept(call.Authorization)) {
		writeJSONAnswer(w, http.StatusUnauthorized, linearError("AUTHENTICATION_ERROR",
			"Authentication required, not authenticated (got "+call.Authorization+")"))
		return
	}

	f.mu.Lock()
	answer, hang := f.resolve(call)
	f.mu.Unlock()
	if hang {
		// Bounded, so a caller that never gives up fails the test instead
		// of blocking the server's Close forever.
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
		return
	}
	writeJSONAnswer(w, http.StatusOK, answer)
}

// resolve runs one operation against the workspace; hang reports a create
// that took effect and must not be answered.
func (f *fakeLinear) resolve(call linearCall) (answer any, hang bool) {
	q, vars := call.Query, call.Variables
	switch {
	case strings.Contains(q, "issueCreate("):
		in, _ := vars["input"].(map[string]any)
		id, _ := in["id"].(string)
		if id == "" {
			id = uuid.NewString()
		} else if _, taken := f.issues[id]; taken {
			return linearError("INVALID_INPUT", "Entity already exists"), false
		}
		f.insertIssue(id, in)
		if f.hangCreates > 0 {
			f.hangCreates--
			return nil, true
		}
		return linearData("issueCreate", map[string]any{"success": true, "issue": f.issues[id]}), false
	case strings.Contains(q, "commentCreate("):
		in, _ := vars["input"].(map[string]any)
		id, _ := in["id"].(string)
		if id == "" {
			id = uuid.NewString()
		} else if _, taken := f.comments[id]; taken {
			return linearError("INVALID_INPUT", "Entity already exists"), false
		}
		issue, ok := f.issues[fmt.Sprint(in["issueId"])]
		if !ok {
			return linearError("INVALID_INPUT", "Entity not found: Issue"), false
		}
		f.comments[id] = map[string]any{
			"id": id, "body": in["body"], "url": fmt.Sprint(issue["url"], "#comment-", id[:8]),
			"createdAt": "2025-03-02T10:00:00.000Z", "updatedAt": "2025-03-02T10:00:00.000Z",
			"user":  map[string]any{"id": "user-ada", "name": "Ada Lovelace"},
			"issue": map[string]any{"id": issue["id"], "identifier": issue["identifier"]},
		}
		return linearData("commentCreate", map[string]any{"success": true, "comment": f.comments[id]}), false
	case strings.Contains(q, "issues("):
		return f.issuesPage(vars), false
	case strings.Contains(q, "issue("):
		id := fmt.Sprint(vars["id"])
		for _, is := range f.issues {
			if is["id"] == id || is["identifier"] == id {
				return linearData("issue", is), false
			}
		}
		return linearError("INVALID_INPUT", "Entity not found: Issue"), false
	case strings.Contains(q, "comment("):
		if c, ok := f.comments[fmt.Sprint(vars["id"])]; ok {
			return linearData("comment", c), false
		}
		return linearError("INVALID_INPUT", "Entity not found: Comment"), false
	}
	return linearError("GRAPHQL_VALIDATION_FAILED", `Cannot query field on type "Query".`), false
}

// issuesPage answers issues(first, after, filter) with Linear's connection
// shape; cursors are opaque.
func (f *fakeLinear) issuesPage(vars map[string]any) any {
	first := int(vars["first"].(float64))
	ids := f.order
	if after, ok := vars["after"].(string); ok {
		raw, err := base64.StdEncoding.DecodeString(after)
		i := slices.Index(ids, string(raw))
		if err != nil || i < 0 {
			return linearError("INVALID_INPUT", "Invalid cursor")
		}
		ids = ids[i+1:]
	}
	page := ids[:min(first, len(ids))]
	nodes := make([]any, len(page))
	for i, id := range page {
		nodes[i] = f.issues[id]
	}
	var end any
	if len(page) > 0 {
		end = base64.StdEncoding.EncodeToString([]byte(page[len(page)-1]))
	}
	return linearData("issues", map[string]any{
		"nodes":    nodes,
		"pageInfo": map[string]any{"hasNextPage": len(ids) > len(page), "endCursor": end},
	})
}

func linearData(field string, v any) any {
	return map[string]any{"data": map[string]any{field: v}}
}

// linearError is Linear's error answer: an errors array with extensions and
// null data.
func linearError(code, message string) any {
	return map[string]any{
		"errors": []any{map[string]any{
			"message":    message,
			"locations":  []any{map[string]any{"line": 2, "column": 3}},
			"extensions": map[string]any{"code": code, "type": strings.ToLower(strings.ReplaceAll(code, "_", " ")), "userError": true},
		}},
		"data": nil,
	}
}

// fakeSentry is a loopback Sentry REST API (under /api/0) over in-memory
// issues of one organization. It answers with Sentry's JSON, trailing-slash
// routes, Link pagination headers and {"detail": ...} error bodies.
type fakeSentry struct {
	server *httptest.Server

	mu     sync.Mutex
	issues map[string]map[string]any
	calls  []sentryCall
	// intercept, when set, may answer a request in place of the API.
	intercept func(w http.ResponseWriter, r *http.Request) bool
}

// sentryCall is what the fake saw of one request.
type sentryCall struct {
	Method, Path, Authorization string
	Body                        map[string]any
}

func newFakeSentry(t testing.TB) *fakeSentry {
	f := &fakeSentry{issues: map[string]map[string]any{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/0/projects/{org}/{project}/issues/{$}", f.listIssues)
	mux.HandleFunc("GET /api/0/issues/{id}/{$}", f.getIssue)
	mux.HandleFunc("GET /api/0/organizations/{org}/issues/{id}/{$}", f.getIssue)
	mux.HandleFunc("PUT /api/0/issues/{id}/{$}", f.updateIssue)
	mux.HandleFunc("PUT /api/0/organizations/{org}/issues/{id}/{$}", f.updateIssue)
	f.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(raw))
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		f.mu.Lock()
		f.calls = append(f.calls, sentryCall{Method: r.Method, Path: r.URL.EscapedPath(), Authorization: r.Header.Get("Authorization"), Body: body})
		intercept := f.intercept
		f.mu.Unlock()
		if intercept != nil && intercept(w, r) {
			return
		}
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			writeJSONAnswer(w, http.StatusUnauthorized, map[string]any{"detail": "Authentication credentials were not provided."})
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.server.Close)
	return f
}

// URL is the API root, as providers.sentry.base_url takes it.
func (f *fakeSentry) URL() string { return f.server.URL + "/api/0" }

func (f *fakeSentry) setIntercept(h func(w http.ResponseWriter, r *http.Request) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.intercept = h
}

func (f *fakeSentry) recorded() []sentryCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// seedIssue stores an issue of project and returns its id.
func (f *fakeSentry) seedIssue(project, title string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := fmt.Sprint(4504123456 + len(f.issues))
	f.issues[id] = map[string]any{
		"id": id, "shortId": strings.ToUpper(project) + "-" + fmt.Sprint(len(f.issues)+1), "title": title,
		"culprit": "app/handlers.py in checkout", "status": "unresolved", "level": "error",
		"count": "12", "userCount": 3, "firstSeen": "2025-03-01T09:00:00Z", "lastSeen": "2025-03-02T09:00:00Z",
		"assignedTo": nil, "project": map[string]any{"id": "2", "slug": project, "name": project},
		"permalink": "https://acme.sentry.io/issues/" + id + "/",
	}
	return id
}

func (f *fakeSentry) listIssues(w http.ResponseWriter, r *http.Request) {
	issues := []any{}
	for _, is := range f.issues {
		if is["project"].(map[string]any)["slug"] == r.PathValue("project") {
			issues = append(issues, is)
		}
	}
	base := "https://sentry.io" + r.URL.Path
	w.Header().Set("Link", `<`+base+`?cursor=0:0:1>; rel="previous"; results="false"; cursor="0:0:1", <`+base+`?cursor=0:100:0>; rel="next"; results="false"; cursor="0:100:0"`)
	writeJSONAnswer(w, http.StatusOK, issues)
}

func (f *fakeSentry) getIssue(w http.ResponseWriter, r *http.Request) {
	is, ok := f.issues[r.PathValue("id")]
	if !ok {
		writeJSONAnswer(w, http.StatusNotFound, map[string]any{"detail": "The requested resource does not exist"})
		return
	}
	writeJSONAnswer(w, http.StatusOK, is)
}

func (f *fakeSentry) updateIssue(w http.ResponseWriter, r *http.Request) {
	is, ok := f.issues[r.PathValue("id")]
	if !ok {
		writeJSONAnswer(w, http.StatusNotFound, map[string]any{"detail": "The requested resource does not exist"})
		return
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeJSONAnswer(w, http.StatusBadRequest, map[string]any{"detail": "Invalid JSON"})
		return
	}
	// Like Sentry, the answer holds the fields that changed.
	changed := map[string]any{}
	if s, ok := body["status"]; ok {
		is["status"], changed["status"], changed["statusDetails"] = s, s, map[string]any{}
	}
	if a, ok := body["assignedTo"]; ok {
		is["assignedTo"], changed["assignedTo"] = a, a
	}
	writeJSONAnswer(w, http.StatusOK, changed)
}

// fakeBroker is a loopback token broker speaking credential.Broker's
// protocol: POST {"organization_id","integration","user_id","refresh"},
// answer {"access_token","token_type","expires_at","status"}.
type fakeBroker struct {
	server *httptest.Server

	mu sync.Mutex
	// token is handed out until a refresh request, which switches it to
	// refreshed (when set).
	token, refreshed string
	// status, when set, is the connection's status in every answer.
	status string
	// unavailable is how many requests are answered 503 before any other.
	unavailable int
	calls       []brokerCall
}

// brokerCall is what the broker saw of one request.
type brokerCall struct {
	Authorization  string
	OrganizationID string `json:"organization_id"`
	Integration    string `json:"integration"`
	UserID         string `json:"user_id"`
	Refresh        bool   `json:"refresh"`
}

func newFakeBroker(t testing.TB, token, refreshed, status string) *fakeBroker {
	f := &fakeBroker{token: token, refreshed: refreshed, status: status}
	f.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var call brokerCall
		if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&call) != nil {
			writeJSONAnswer(w, http.StatusBadRequest, map[string]any{"error": "bad request"})
			return
		}
		call.Authorization = r.Header.Get("Authorization")
		f.mu.Lock()
		defer f.mu.Unlock()
		f.calls = append(f.calls, call)
		if !strings.HasPrefix(call.Authorization, "Bearer ") {
			writeJSONAnswer(w, http.StatusUnauthorized, map[string]any{"error": "unauthorized"})
			return
		}
		if f.unavailable > 0 {
			f.unavailable--
			writeJSONAnswer(w, http.StatusServiceUnavailable, map[string]any{"error": "try again"})
			return
		}
		if f.status != "" && f.status != "active" {
			writeJSONAnswer(w, http.StatusOK, map[string]any{"status": f.status})
			return
		}
		if call.Refresh && f.refreshed != "" {
			f.token = f.refreshed
		}
		writeJSONAnswer(w, http.StatusOK, map[string]any{
			"access_token": f.token, "token_type": "bearer", "status": "active",
			"expires_at": time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
		})
	}))
	t.Cleanup(f.server.Close)
	return f
}

// failNext makes the next n requests fail with 503.
func (f *fakeBroker) failNext(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unavailable = n
}

func (f *fakeBroker) recorded() []brokerCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func writeJSONAnswer(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func orDefault(v, def any) any {
	if v == nil {
		return def
	}
	return v
}
