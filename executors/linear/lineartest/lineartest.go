// Package lineartest is a loopback Linear GraphQL API for tests, over an
// in-memory workspace. It parses each request's {"query","variables"}
// document, dispatches on the root field the query selects, and answers in
// Linear's shapes: data payloads with success flags, connections with
// pageInfo, and errors arrays with extensions; a bad credential is HTTP 400
// with an AUTHENTICATION_ERROR, as Linear answers it. Like Linear, it
// refuses to create an issue or comment whose client-chosen id is taken or
// is not a UUID v4.
//
// The workspace has the teams team-eng (ENG) and team-ops (OPS), the
// workflow states state-todo, state-started and state-done, the users
// user-ada and user-alan, the project project-q3 and the labels label-bug
// and label-infra.
package lineartest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/outboxd/outboxd/executors/providertest"
)

// Server is a loopback Linear. Its methods are safe for concurrent use.
type Server struct {
	srv *providertest.Server

	mu sync.Mutex

	// restricted: only accepted Authorization values are let in.
	restricted bool
	accepted   []string

	issues      map[string]*Issue
	issueOrder  []string
	comments    map[string]*Comment
	teamNumbers map[string]int
	created     int

	calls providertest.Log[Call]

	// hangNextMutation makes the next successful mutation take effect and
	// then never answer, as when the answer is lost to a timeout.
	hangNextMutation bool

	// duplicateMessage is the message of Linear's answer to a create whose
	// id is taken.
	duplicateMessage string

	// withhold makes mutations answer success with a null object, and
	// withholdReads makes reads of issues and comments find nothing, as
	// for a token that may write objects it cannot read back.
	withhold, withholdReads bool

	// override, when set, answers every request in place of the workspace.
	override Handler
}

// Handler answers one parsed GraphQL request.
type Handler func(w http.ResponseWriter, r *http.Request, call Call)

// Call is what the server saw of one request.
type Call struct {
	Header        http.Header
	OperationName string
	Query         string
	Variables     json.RawMessage
}

// Authorization is the call's Authorization header.
func (c Call) Authorization() string { return c.Header.Get("Authorization") }

// Vars are the call's variables decoded; nil when there are none.
func (c Call) Vars() map[string]any {
	var v map[string]any
	_ = json.Unmarshal(c.Variables, &v)
	return v
}

// Issue is an issue of the workspace.
type Issue struct {
	ID          string
	Identifier  string
	Title       string
	Description *string
	Priority    int
	TeamID      string
	ProjectID   string
	StateID     string
	AssigneeID  string
	LabelIDs    []string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Comment is a comment on an issue.
type Comment struct {
	ID        string
	IssueID   string
	Body      string
	CreatedAt time.Time
}

var (
	fakeTeams    = map[string]string{"team-eng": "ENG", "team-ops": "OPS"}
	fakeStates   = map[string]string{"state-todo": "Todo", "state-started": "In Progress", "state-done": "Done"}
	fakeUsers    = map[string]string{"user-ada": "Ada Lovelace", "user-alan": "Alan Turing"}
	fakeProjects = map[string]string{"project-q3": "Q3 launch"}
	fakeLabels   = map[string]string{"label-bug": "Bug", "label-infra": "Infra"}

	priorityLabels = []string{"No priority", "Urgent", "High", "Medium", "Low"}

	fakeEpoch = time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)
)

const defaultDuplicateMessage = "Entity already exists"

// New starts a server over an empty workspace, closed when t ends. It
// accepts any Authorization until AcceptOnly says otherwise.
func New(t testing.TB) *Server {
	f := &Server{
		issues:           make(map[string]*Issue),
		comments:         make(map[string]*Comment),
		teamNumbers:      make(map[string]int),
		duplicateMessage: defaultDuplicateMessage,
	}
	f.srv = providertest.New(t, http.HandlerFunc(f.serve))
	return f
}

// URL is the GraphQL endpoint, the source's base URL.
func (f *Server) URL() string { return f.srv.URL() + "/graphql" }

// Client is a client that reaches the server.
func (f *Server) Client() *http.Client { return f.srv.Client() }

// Close stops the server: calls are then refused.
func (f *Server) Close() { f.srv.Close() }

// AcceptOnly lets in only requests with one of these Authorization values
// (none with no values); others get Linear's authentication error.
func (f *Server) AcceptOnly(authorizations ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.restricted, f.accepted = true, authorizations
}

// AnswerWith makes h answer every request from now on.
func (f *Server) AnswerWith(h Handler) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.override = h
}

// HangAfterNextMutation makes the next successful mutation never answer.
func (f *Server) HangAfterNextMutation() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hangNextMutation = true
}

// WithholdObjects makes mutations take effect and answer success with a
// null object ({"success": true, "issue": null}), as Linear does when the
// token may make the change but not read the object back; with reads, a
// read of an issue or a comment then answers that there is none.
func (f *Server) WithholdObjects(reads bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.withhold, f.withholdReads = true, reads
}

// SetDuplicateMessage is the message of the answer to a create whose id
// is taken; default "Entity already exists".
func (f *Server) SetDuplicateMessage(msg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.duplicateMessage = msg
}

// Calls are the requests the server saw, in order.
func (f *Server) Calls() []Call { return f.calls.All() }

// IssueCount is how many issues the workspace holds.
func (f *Server) IssueCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.issues)
}

// CommentCount is how many comments the workspace holds.
func (f *Server) CommentCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.comments)
}

// Issue returns a copy of the issue with this id.
func (f *Server) Issue(id string) Issue {
	f.mu.Lock()
	defer f.mu.Unlock()
	return *f.issues[id]
}

// Comment returns a copy of the comment with this id; ok is false when
// there is none.
func (f *Server) Comment(id string) (c Comment, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p := f.comments[id]; p != nil {
		return *p, true
	}
	return c, false
}

// SeedIssue stores an issue directly, as if created in Linear's UI.
func (f *Server) SeedIssue(teamID, projectID, title string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.insertIssue(&Issue{ID: uuid.NewString(), TeamID: teamID, ProjectID: projectID, Title: title, StateID: "state-todo"})
}

func (f *Server) insertIssue(is *Issue) string {
	f.teamNumbers[is.TeamID]++
	is.Identifier = fmt.Sprintf("%s-%d", fakeTeams[is.TeamID], f.teamNumbers[is.TeamID])
	is.CreatedAt = fakeEpoch.Add(time.Duration(f.created) * time.Minute)
	is.UpdatedAt = is.CreatedAt
	f.created++
	f.issues[is.ID] = is
	f.issueOrder = append(f.issueOrder, is.ID)
	return is.ID
}

func (f *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/graphql" {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var body struct {
		Query         string          `json:"query"`
		OperationName string          `json:"operationName"`
		Variables     json.RawMessage `json:"variables"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Query == "" {
		WriteJSON(w, http.StatusBadRequest, Errors("GRAPHQL_PARSE_FAILED", "Must provide query string.", ""))
		return
	}
	call := Call{
		Header:        r.Header.Clone(),
		OperationName: body.OperationName,
		Query:         body.Query,
		Variables:     body.Variables,
	}

	f.calls.Add(call)
	f.mu.Lock()
	override := f.override
	f.mu.Unlock()
	if override != nil {
		override(w, r, call)
		return
	}

	f.mu.Lock()
	restricted, accepted := f.restricted, f.accepted
	f.mu.Unlock()
	if auth := r.Header.Get("Authorization"); auth == "" || (restricted && !slices.Contains(accepted, auth)) {
		// Linear answers a bad credential with HTTP 400 and a GraphQL error.
		WriteJSON(w, http.StatusBadRequest, gqlErrorsTyped("AUTHENTICATION_ERROR", "authentication error",
			"Authentication required, not authenticated", "You need to authenticate to access this operation."))
		return
	}

	f.mu.Lock()
	answer, mutated := f.resolve(call)
	hang := mutated && f.hangNextMutation
	if hang {
		f.hangNextMutation = false
	}
	f.mu.Unlock()

	if hang {
		providertest.Stall(r, 10*time.Second)
		return
	}
	WriteJSON(w, http.StatusOK, answer)
}

// resolve runs one operation against the workspace. mutated reports a
// mutation that took effect.
func (f *Server) resolve(call Call) (answer any, mutated bool) {
	q := call.Query
	for field, names := range map[string]map[string]string{
		"user": fakeUsers, "workflowState": fakeStates, "team": fakeTeams, "issueLabel": fakeLabels,
	} {
		if strings.Contains(q, " "+field+"(") {
			return f.nameQuery(field, names, call.Variables), false
		}
	}
	switch {
	case strings.Contains(q, "issueCreate("):
		return f.issueCreate(call.Variables)
	case strings.Contains(q, "issueUpdate("):
		return f.issueUpdate(call.Variables)
	case strings.Contains(q, "commentCreate("):
		return f.commentCreate(call.Variables)
	case strings.Contains(q, "issues("):
		return f.issuesQuery(call.Variables), false
	case strings.Contains(q, "issue("):
		return f.issueQuery(call.Variables), false
	case strings.Contains(q, "comment("):
		return f.commentQuery(call.Variables), false
	default:
		return Errors("GRAPHQL_VALIDATION_FAILED", "Cannot query field on type \"Query\".", ""), false
	}
}

func (f *Server) issuesQuery(raw json.RawMessage) any {
	var vars struct {
		First  int     `json:"first"`
		After  *string `json:"after"`
		Filter *struct {
			Team    *struct{ ID struct{ Eq string } } `json:"team"`
			Project *struct{ ID struct{ Eq string } } `json:"project"`
		} `json:"filter"`
	}
	if err := decodeStrict(raw, &vars); err != nil {
		return variableError(err)
	}
	if vars.First > 250 {
		return Errors("INVALID_INPUT", "first cannot be more than 250", "")
	}

	var matching []*Issue
	for _, id := range f.issueOrder {
		is := f.issues[id]
		if vars.Filter != nil && vars.Filter.Team != nil && is.TeamID != vars.Filter.Team.ID.Eq {
			continue
		}
		if vars.Filter != nil && vars.Filter.Project != nil && is.ProjectID != vars.Filter.Project.ID.Eq {
			continue
		}
		matching = append(matching, is)
	}
	if vars.After != nil {
		i := slices.IndexFunc(matching, func(is *Issue) bool { return is.ID == *vars.After })
		if i < 0 {
			return Errors("INVALID_INPUT", "Invalid cursor", "")
		}
		matching = matching[i+1:]
	}
	hasNext := len(matching) > vars.First
	page := matching[:min(vars.First, len(matching))]

	nodes := make([]any, len(page))
	for i, is := range page {
		nodes[i] = issueJSON(is)
	}
	var endCursor any
	if len(page) > 0 {
		endCursor = page[len(page)-1].ID
	}
	return Data("issues", map[string]any{
		"nodes":    nodes,
		"pageInfo": map[string]any{"hasNextPage": hasNext, "endCursor": endCursor},
	})
}

func (f *Server) findIssue(idOrIdentifier string) *Issue {
	if is, ok := f.issues[idOrIdentifier]; ok {
		return is
	}
	for _, is := range f.issues {
		if is.Identifier == idOrIdentifier {
			return is
		}
	}
	return nil
}

func (f *Server) issueQuery(raw json.RawMessage) any {
	var vars struct {
		ID string `json:"id"`
	}
	if err := decodeStrict(raw, &vars); err != nil {
		return variableError(err)
	}
	is := f.findIssue(vars.ID)
	if is == nil || f.withholdReads {
		return entityNotFound("Issue")
	}
	return Data("issue", issueJSON(is))
}

func (f *Server) issueCreate(raw json.RawMessage) (any, bool) {
	var vars struct {
		Input struct {
			ID          *string  `json:"id"`
			TeamID      string   `json:"teamId"`
			Title       string   `json:"title"`
			Description *string  `json:"description"`
			AssigneeID  *string  `json:"assigneeId"`
			StateID     *string  `json:"stateId"`
			Priority    *int     `json:"priority"`
			LabelIDs    []string `json:"labelIds"`
			ProjectID   *string  `json:"projectId"`
		} `json:"input"`
	}
	if err := decodeStrict(raw, &vars); err != nil {
		return variableError(err), false
	}
	in := vars.Input

	id := uuid.NewString()
	if in.ID != nil {
		if !uuidV4(*in.ID) {
			return Errors("INVALID_INPUT", "Argument Validation Error", "id must be a UUID v4."), false
		}
		id = *in.ID
		if _, taken := f.issues[id]; taken {
			return Errors("INVALID_INPUT", f.duplicateMessage, ""), false
		}
	}
	if _, ok := fakeTeams[in.TeamID]; !ok {
		return entityNotFound("Team"), false
	}
	if len(in.Title) > 255 {
		return Errors("INVALID_INPUT", "Argument Validation Error", "Title must be shorter than 256 characters."), false
	}
	is := &Issue{
		ID:          id,
		Title:       in.Title,
		Description: in.Description,
		TeamID:      in.TeamID,
		StateID:     "state-todo",
		LabelIDs:    in.LabelIDs,
	}
	if in.Priority != nil {
		is.Priority = *in.Priority
	}
	if in.AssigneeID != nil {
		is.AssigneeID = *in.AssigneeID
	}
	if in.StateID != nil {
		is.StateID = *in.StateID
	}
	if in.ProjectID != nil {
		is.ProjectID = *in.ProjectID
	}
	f.insertIssue(is)
	return f.payload("issueCreate", "issue", issueJSON(is)), true
}

func (f *Server) issueUpdate(raw json.RawMessage) (any, bool) {
	var vars struct {
		ID    string `json:"id"`
		Input struct {
			Title       *string `json:"title"`
			Description *string `json:"description"`
			AssigneeID  *string `json:"assigneeId"`
			StateID     *string `json:"stateId"`
			Priority    *int    `json:"priority"`
		} `json:"input"`
	}
	if err := decodeStrict(raw, &vars); err != nil {
		return variableError(err), false
	}
	is := f.findIssue(vars.ID)
	if is == nil {
		return entityNotFound("Issue"), false
	}
	in := vars.Input
	if in.Title != nil {
		is.Title = *in.Title
	}
	if in.Description != nil {
		is.Description = in.Description
	}
	if in.AssigneeID != nil {
		is.AssigneeID = *in.AssigneeID
	}
	if in.StateID != nil {
		if _, ok := fakeStates[*in.StateID]; !ok {
			return entityNotFound("WorkflowState"), false
		}
		is.StateID = *in.StateID
	}
	if in.Priority != nil {
		is.Priority = *in.Priority
	}
	is.UpdatedAt = is.UpdatedAt.Add(time.Hour)
	return f.payload("issueUpdate", "issue", issueJSON(is)), true
}

func (f *Server) commentCreate(raw json.RawMessage) (any, bool) {
	var vars struct {
		Input struct {
			ID      *string `json:"id"`
			IssueID string  `json:"issueId"`
			Body    string  `json:"body"`
		} `json:"input"`
	}
	if err := decodeStrict(raw, &vars); err != nil {
		return variableError(err), false
	}
	in := vars.Input
	id := uuid.NewString()
	if in.ID != nil {
		if !uuidV4(*in.ID) {
			return Errors("INVALID_INPUT", "Argument Validation Error", "id must be a UUID v4."), false
		}
		id = *in.ID
		if _, taken := f.comments[id]; taken {
			return Errors("INVALID_INPUT", f.duplicateMessage, ""), false
		}
	}
	is := f.findIssue(in.IssueID)
	if is == nil {
		return entityNotFound("Issue"), false
	}
	c := &Comment{ID: id, IssueID: is.ID, Body: in.Body, CreatedAt: fakeEpoch.Add(time.Duration(len(f.comments)) * time.Second)}
	f.comments[id] = c
	return f.payload("commentCreate", "comment", f.commentJSON(c)), true
}

func (f *Server) commentQuery(raw json.RawMessage) any {
	var vars struct {
		ID string `json:"id"`
	}
	if err := decodeStrict(raw, &vars); err != nil {
		return variableError(err)
	}
	c, ok := f.comments[vars.ID]
	if !ok || f.withholdReads {
		return entityNotFound("Comment")
	}
	return Data("comment", f.commentJSON(c))
}

// payload is a mutation's successful answer: field's payload with obj as
// its key, or null when the server withholds objects.
func (f *Server) payload(field, key string, obj any) any {
	if f.withhold {
		obj = nil
	}
	return Data(field, map[string]any{"success": true, key: obj})
}

// uuidV4 reports whether id is a UUID of version 4, the only kind Linear
// documents for the client-chosen id of a create ("The identifier in UUID
// v4 format").
func uuidV4(id string) bool {
	u, err := uuid.Parse(id)
	return err == nil && u.Version() == 4 && u.Variant() == uuid.RFC4122
}

func issueJSON(is *Issue) map[string]any {
	labels := make([]any, 0, len(is.LabelIDs))
	for _, id := range is.LabelIDs {
		labels = append(labels, map[string]any{"id": id, "name": fakeLabels[id]})
	}
	var assignee, project any
	if is.AssigneeID != "" {
		assignee = map[string]any{"id": is.AssigneeID, "name": fakeUsers[is.AssigneeID]}
	}
	if is.ProjectID != "" {
		project = map[string]any{"id": is.ProjectID, "name": fakeProjects[is.ProjectID]}
	}
	return map[string]any{
		"id":            is.ID,
		"identifier":    is.Identifier,
		"title":         is.Title,
		"description":   is.Description,
		"priority":      is.Priority,
		"priorityLabel": priorityLabels[is.Priority],
		"url":           "https://linear.app/acme/issue/" + is.Identifier,
		"createdAt":     is.CreatedAt.Format(time.RFC3339Nano),
		"updatedAt":     is.UpdatedAt.Format(time.RFC3339Nano),
		"state":         map[string]any{"id": is.StateID, "name": fakeStates[is.StateID], "type": "unstarted"},
		"assignee":      assignee,
		"team":          map[string]any{"id": is.TeamID, "key": fakeTeams[is.TeamID], "name": fakeTeams[is.TeamID]},
		"project":       project,
		"labels":        map[string]any{"nodes": labels},
	}
}

func (f *Server) commentJSON(c *Comment) map[string]any {
	is := f.issues[c.IssueID]
	return map[string]any{
		"id":        c.ID,
		"body":      c.Body,
		"url":       "https://linear.app/acme/issue/" + is.Identifier + "#comment-" + c.ID[:8],
		"createdAt": c.CreatedAt.Format(time.RFC3339Nano),
		"updatedAt": c.CreatedAt.Format(time.RFC3339Nano),
		"user":      map[string]any{"id": "user-ada", "name": fakeUsers["user-ada"]},
		"issue":     map[string]any{"id": is.ID, "identifier": is.Identifier},
	}
}

// Data is a GraphQL answer with field's value.
func Data(field string, value any) any {
	return map[string]any{"data": map[string]any{field: value}}
}

// Errors is Linear's error answer: an errors array and null data.
func Errors(code, message, userMessage string) any {
	return gqlErrorsTyped(code, strings.ToLower(strings.ReplaceAll(code, "_", " ")), message, userMessage)
}

func gqlErrorsTyped(code, typ, message, userMessage string) any {
	ext := map[string]any{"code": code, "type": typ, "userError": true}
	if userMessage != "" {
		ext["userPresentableMessage"] = userMessage
	}
	return map[string]any{
		"errors": []any{map[string]any{
			"message":    message,
			"locations":  []any{map[string]any{"line": 2, "column": 3}},
			"extensions": ext,
		}},
		"data": nil,
	}
}

func entityNotFound(entity string) any {
	return Errors("INVALID_INPUT", "Entity not found: "+entity, "Could not find referenced "+entity+".")
}

func variableError(err error) any {
	return Errors("GRAPHQL_VALIDATION_FAILED", "Variable got invalid value: "+err.Error(), "")
}

// decodeStrict decodes variables, refusing fields the GraphQL input types do
// not define, as Linear's schema validation does.
func decodeStrict(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		raw = json.RawMessage(`{}`)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data")
	}
	return nil
}

// WriteJSON answers status with v as JSON.
func WriteJSON(w http.ResponseWriter, status int, v any) { providertest.WriteJSON(w, status, v) }

// nameQuery answers a read of one user, workflow state, team or label by
// id with its name.
func (f *Server) nameQuery(field string, names map[string]string, raw json.RawMessage) any {
	var vars struct {
		ID string `json:"id"`
	}
	if err := decodeStrict(raw, &vars); err != nil {
		return variableError(err)
	}
	name, ok := names[vars.ID]
	if !ok {
		return entityNotFound(strings.ToUpper(field[:1]) + field[1:])
	}
	return Data(field, map[string]any{"id": vars.ID, "name": name})
}
