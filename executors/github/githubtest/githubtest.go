// Package githubtest is a loopback GitHub REST API for tests: repositories
// with issues, pull requests and comments in memory, served in GitHub's
// shapes (status codes, JSON bodies, error bodies, Link pagination,
// rate-limit headers) under /api/v3, as on GitHub Enterprise Server.
package githubtest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/outboxd/outboxd/executors/providertest"
)

// basePath is where the API is served, as on GitHub Enterprise Server.
const basePath = "/api/v3"

// Issue is an issue or, with PullRequest set, a pull request.
type Issue struct {
	Number    int
	Title     string
	Body      string
	State     string // open or closed
	User      string
	Labels    []string
	Assignees []string
	Milestone *int
	Comments  int
	CreatedAt time.Time
	UpdatedAt time.Time
	// PullRequest is set on pull requests.
	PullRequest *PullRequest
}

// PullRequest is what a pull request has beyond its issue.
type PullRequest struct {
	Head, Base string // branch names
	HeadSHA    string
	Draft      bool
	MergedAt   *time.Time
}

// Comment is an issue comment.
type Comment struct {
	ID        int64
	Body      string
	User      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Request is what the server saw of one call.
type Request = providertest.Request

type repo struct {
	owner, name   string
	collaborators []string
	issues        []*Issue // by number - 1
	comments      map[int][]*Comment
}

// Server is a loopback GitHub. Its methods are safe for concurrent use.
type Server struct {
	srv *providertest.Server

	mu        sync.Mutex
	tokens    []string
	repos     map[string]*repo
	lose      int
	commentID int64
	remaining int
}

// New starts a server, closed when t ends. It accepts any bearer token
// until AcceptOnly says otherwise.
func New(t testing.TB) *Server {
	s := &Server{repos: map[string]*repo{}, commentID: 1_000_000, remaining: 5000}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+basePath+"/repos/{owner}/{repo}", s.getRepo)
	mux.HandleFunc("GET "+basePath+"/repos/{owner}/{repo}/assignees/{login}", s.checkAssignee)
	mux.HandleFunc("POST "+basePath+"/repos/{owner}/{repo}/issues", s.createIssue)
	mux.HandleFunc("GET "+basePath+"/repos/{owner}/{repo}/issues", s.listIssues)
	mux.HandleFunc("GET "+basePath+"/repos/{owner}/{repo}/issues/{number}", s.getIssue)
	mux.HandleFunc("GET "+basePath+"/repos/{owner}/{repo}/issues/{number}/comments", s.listComments)
	mux.HandleFunc("POST "+basePath+"/repos/{owner}/{repo}/issues/{number}/comments", s.createComment)
	mux.HandleFunc("GET "+basePath+"/repos/{owner}/{repo}/pulls", s.listPulls)
	mux.HandleFunc("GET "+basePath+"/repos/{owner}/{repo}/pulls/{number}", s.getPull)
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { WriteError(w, http.StatusNotFound, "Not Found") })
	s.srv = providertest.New(t, s.serve(mux))
	return s
}

// URL is the API root, the source's base URL.
func (s *Server) URL() string { return s.srv.URL() + basePath }

// Client is a client that reaches the server.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// AcceptOnly lets in only these bearer tokens; others get 401.
func (s *Server) AcceptOnly(tokens ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens = tokens
}

// AddRepo creates an empty repository owned by owner, whose collaborators
// (the users issues may be assigned to) are owner and collaborators.
func (s *Server) AddRepo(owner, name string, collaborators ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repos[strings.ToLower(owner+"/"+name)] = &repo{
		owner: owner, name: name, collaborators: append([]string{owner}, collaborators...), comments: map[int][]*Comment{},
	}
}

// SeedIssue adds issue (or, with PullRequest set, a pull request) to a
// repository and returns its number. Zero fields get defaults.
func (s *Server) SeedIssue(owner, name string, issue Issue) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repos[strings.ToLower(owner+"/"+name)]
	now := time.Now().UTC().Truncate(time.Second)
	issue.Number = len(r.issues) + 1
	issue.State = cmp.Or(issue.State, "open")
	issue.User = cmp.Or(issue.User, r.owner)
	issue.CreatedAt = cmp.Or(issue.CreatedAt, now)
	issue.UpdatedAt = cmp.Or(issue.UpdatedAt, issue.CreatedAt)
	r.issues = append(r.issues, &issue)
	return issue.Number
}

// Issues returns copies of a repository's issues and pull requests, by
// number.
func (s *Server) Issues(owner, name string) []Issue {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Issue
	for _, is := range s.repos[strings.ToLower(owner+"/"+name)].issues {
		out = append(out, *is)
	}
	return out
}

// Comments returns copies of the comments on an issue, oldest first.
func (s *Server) Comments(owner, name string, number int) []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Comment
	for _, c := range s.repos[strings.ToLower(owner+"/"+name)].comments[number] {
		out = append(out, *c)
	}
	return out
}

// Requests returns what the server saw, in order.
func (s *Server) Requests() []Request { return s.srv.Requests() }

// Intercept lets h answer a request in place of the repositories; h
// returns false to let them answer. Requests are recorded either way.
func (s *Server) Intercept(h func(w http.ResponseWriter, r *http.Request) bool) {
	s.srv.Intercept(h)
}

// LoseNextCreates makes the next n creates (issues or comments) take
// effect and then answer 502, as when GitHub's answer is lost.
func (s *Server) LoseNextCreates(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lose += n
}

// WriteError answers with GitHub's error shape.
func WriteError(w http.ResponseWriter, status int, message string, errs ...map[string]any) {
	body := map[string]any{
		"message":           message,
		"documentation_url": "https://docs.github.com/rest",
		"status":            strconv.Itoa(status),
	}
	if len(errs) > 0 {
		body["errors"] = errs
	}
	providertest.WriteJSON(w, status, body)
}

// serve sets the rate-limit headers, runs the intercept and checks the
// token before next.
func (s *Server) serve(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		tokens := s.tokens
		s.remaining = max(s.remaining-1, 0)
		h := w.Header()
		h.Set("X-RateLimit-Limit", "5000")
		h.Set("X-RateLimit-Remaining", strconv.Itoa(s.remaining))
		h.Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
		h.Set("X-RateLimit-Resource", "core")
		h.Set("X-GitHub-Api-Version-Selected", "2022-11-28")
		s.mu.Unlock()

		if s.srv.Intercepted(w, r) {
			return
		}
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || token == "" || (tokens != nil && !slices.Contains(tokens, token)) {
			WriteError(w, http.StatusUnauthorized, "Bad credentials")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// repo returns the request's repository, or answers 404. The caller holds
// s.mu.
func (s *Server) repo(w http.ResponseWriter, r *http.Request) *repo {
	rp := s.repos[strings.ToLower(r.PathValue("owner")+"/"+r.PathValue("repo"))]
	if rp == nil {
		WriteError(w, http.StatusNotFound, "Not Found")
	}
	return rp
}

// issue returns the request's issue, or answers 404. The caller holds s.mu.
func (s *Server) issue(w http.ResponseWriter, r *http.Request) (*repo, *Issue) {
	rp := s.repo(w, r)
	if rp == nil {
		return nil, nil
	}
	n, err := strconv.Atoi(r.PathValue("number"))
	if err != nil || n < 1 || n > len(rp.issues) {
		WriteError(w, http.StatusNotFound, "Not Found")
		return nil, nil
	}
	return rp, rp.issues[n-1]
}

// loseAnswer reports whether this create's answer is to be lost. The
// caller holds s.mu.
func (s *Server) loseAnswer() bool {
	if s.lose == 0 {
		return false
	}
	s.lose--
	return true
}

func (s *Server) createIssue(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repo(w, r)
	if rp == nil {
		return
	}
	var in struct {
		Title     *string  `json:"title"`
		Body      string   `json:"body"`
		Labels    []string `json:"labels"`
		Assignees []string `json:"assignees"`
		Milestone *int     `json:"milestone"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		WriteError(w, http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	if in.Title == nil || *in.Title == "" {
		WriteError(w, http.StatusUnprocessableEntity, "Invalid request.\n\n\"title\" wasn't supplied.")
		return
	}
	for _, a := range in.Assignees {
		if !slices.Contains(rp.collaborators, a) {
			WriteError(w, http.StatusUnprocessableEntity, "Validation Failed",
				map[string]any{"value": a, "resource": "Issue", "field": "assignees", "code": "invalid"})
			return
		}
	}
	now := time.Now().UTC().Truncate(time.Second)
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	issue := &Issue{
		Number: len(rp.issues) + 1, Title: *in.Title, Body: in.Body, State: "open", User: userOf(token),
		Labels: in.Labels, Assignees: in.Assignees, Milestone: in.Milestone, CreatedAt: now, UpdatedAt: now,
	}
	rp.issues = append(rp.issues, issue)
	if s.loseAnswer() {
		WriteError(w, http.StatusBadGateway, "Server Error")
		return
	}
	w.Header().Set("Location", s.apiURL("/repos/%s/%s/issues/%d", rp.owner, rp.name, issue.Number))
	providertest.WriteJSON(w, http.StatusCreated, s.renderIssue(rp, issue))
}

func (s *Server) getIssue(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rp, issue := s.issue(w, r); issue != nil {
		providertest.WriteJSON(w, http.StatusOK, s.renderIssue(rp, issue))
	}
}

func (s *Server) listIssues(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repo(w, r)
	if rp == nil {
		return
	}
	q := r.URL.Query()
	sinceTime, ok := parseSince(w, q)
	if !ok {
		return
	}
	var list []*Issue
	for _, is := range rp.issues {
		if stateMatches(q.Get("state"), is.State) && !is.UpdatedAt.Before(sinceTime) {
			list = append(list, is)
		}
	}
	sortItems(list, q.Get("sort"), cmp.Or(q.Get("direction"), "desc"))
	page, ok := paginate(w, r, list)
	if !ok {
		return
	}
	out := make([]any, 0, len(page))
	for _, is := range page {
		out = append(out, s.renderIssue(rp, is))
	}
	providertest.WriteJSON(w, http.StatusOK, out)
}

func (s *Server) listComments(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, issue := s.issue(w, r)
	if issue == nil {
		return
	}
	sinceTime, ok := parseSince(w, r.URL.Query())
	if !ok {
		return
	}
	var list []*Comment
	for _, c := range rp.comments[issue.Number] {
		if !c.UpdatedAt.Before(sinceTime) {
			list = append(list, c)
		}
	}
	page, ok := paginate(w, r, list)
	if !ok {
		return
	}
	out := make([]any, 0, len(page))
	for _, c := range page {
		out = append(out, s.renderComment(rp, issue, c))
	}
	providertest.WriteJSON(w, http.StatusOK, out)
}

func (s *Server) createComment(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, issue := s.issue(w, r)
	if issue == nil {
		return
	}
	var in struct {
		Body string `json:"body"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		WriteError(w, http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	if in.Body == "" {
		WriteError(w, http.StatusUnprocessableEntity, "Validation Failed",
			map[string]any{"resource": "IssueComment", "code": "missing_field", "field": "body"})
		return
	}
	now := time.Now().UTC().Truncate(time.Second)
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.commentID++
	c := &Comment{ID: s.commentID, Body: in.Body, User: userOf(token), CreatedAt: now, UpdatedAt: now}
	rp.comments[issue.Number] = append(rp.comments[issue.Number], c)
	issue.Comments++
	issue.UpdatedAt = now
	if s.loseAnswer() {
		WriteError(w, http.StatusBadGateway, "Server Error")
		return
	}
	w.Header().Set("Location", s.apiURL("/repos/%s/%s/issues/comments/%d", rp.owner, rp.name, c.ID))
	providertest.WriteJSON(w, http.StatusCreated, s.renderComment(rp, issue, c))
}

func (s *Server) listPulls(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.repo(w, r)
	if rp == nil {
		return
	}
	q := r.URL.Query()
	var list []*Issue
	for _, is := range rp.issues {
		pr := is.PullRequest
		switch {
		case pr == nil, !stateMatches(q.Get("state"), is.State):
		case q.Get("base") != "" && q.Get("base") != pr.Base:
		case q.Get("head") != "" && q.Get("head") != rp.owner+":"+pr.Head:
		default:
			list = append(list, is)
		}
	}
	sort := q.Get("sort")
	direction := q.Get("direction")
	if direction == "" {
		direction = "asc"
		if sort == "" || sort == "created" {
			direction = "desc"
		}
	}
	sortItems(list, sort, direction)
	page, ok := paginate(w, r, list)
	if !ok {
		return
	}
	out := make([]any, 0, len(page))
	for _, is := range page {
		out = append(out, s.renderPull(rp, is))
	}
	providertest.WriteJSON(w, http.StatusOK, out)
}

func (s *Server) getPull(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp, issue := s.issue(w, r)
	switch {
	case issue == nil:
	case issue.PullRequest == nil:
		WriteError(w, http.StatusNotFound, "Not Found")
	default:
		providertest.WriteJSON(w, http.StatusOK, s.renderPull(rp, issue))
	}
}

// userOf is the login the fake credits a token's creates to.
func userOf(string) string { return "outboxd-bot" }

func stateMatches(want, state string) bool {
	return want == "all" || cmp.Or(want, "open") == state
}

func parseSince(w http.ResponseWriter, q url.Values) (time.Time, bool) {
	if q.Get("since") == "" {
		return time.Time{}, true
	}
	t, err := time.Parse(time.RFC3339, q.Get("since"))
	if err != nil {
		WriteError(w, http.StatusUnprocessableEntity, "Validation Failed",
			map[string]any{"resource": "Search", "field": "since", "code": "invalid"})
		return time.Time{}, false
	}
	return t, true
}

// sortItems orders issues by created (by number, which follows creation)
// or updated time.
func sortItems(list []*Issue, sort, direction string) {
	slices.SortStableFunc(list, func(a, b *Issue) int {
		c := cmp.Compare(a.Number, b.Number)
		if sort == "updated" {
			c = a.UpdatedAt.Compare(b.UpdatedAt)
		}
		if direction == "desc" {
			c = -c
		}
		return c
	})
}

// paginate cuts list to the requested page (per_page default 30, at most
// 100) and sets the Link header with next and last when there are more.
func paginate[T any](w http.ResponseWriter, r *http.Request, list []T) ([]T, bool) {
	q := r.URL.Query()
	perPage, page := 30, 1
	if v := q.Get("per_page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			WriteError(w, http.StatusUnprocessableEntity, "Validation Failed")
			return nil, false
		}
		perPage = min(n, 100)
	}
	if v := q.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			WriteError(w, http.StatusUnprocessableEntity, "Validation Failed")
			return nil, false
		}
		page = n
	}
	last := max(1, (len(list)+perPage-1)/perPage)
	link := func(p int, rel string) string {
		u := *r.URL
		u.Scheme, u.Host = "http", r.Host
		lq := u.Query()
		lq.Set("page", strconv.Itoa(p))
		u.RawQuery = lq.Encode()
		return fmt.Sprintf(`<%s>; rel="%s"`, u.String(), rel)
	}
	if page < last {
		w.Header().Set("Link", link(page+1, "next")+", "+link(last, "last"))
	} else if page > 1 {
		w.Header().Set("Link", link(1, "first")+", "+link(page-1, "prev"))
	}
	start := min((page-1)*perPage, len(list))
	return list[start:min(start+perPage, len(list))], true
}

func (s *Server) apiURL(format string, args ...any) string {
	return s.URL() + fmt.Sprintf(format, args...)
}

func user(login string) map[string]any {
	return map[string]any{"login": login, "id": len(login) * 1000, "type": "User", "site_admin": false}
}

func timeOrNil(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UTC().Format(time.RFC3339)
}

func (s *Server) renderIssue(rp *repo, is *Issue) map[string]any {
	labels := []any{}
	for i, l := range is.Labels {
		labels = append(labels, map[string]any{"id": 100 + i, "name": l, "color": "d73a4a", "default": false})
	}
	assignees := []any{}
	for _, a := range is.Assignees {
		assignees = append(assignees, user(a))
	}
	var closedAt *time.Time
	if is.State == "closed" {
		closedAt = &is.UpdatedAt
	}
	out := map[string]any{
		"id":                 int64(rp.issueIDBase()) + int64(is.Number),
		"node_id":            fmt.Sprintf("I_kwDO%d", is.Number),
		"url":                s.apiURL("/repos/%s/%s/issues/%d", rp.owner, rp.name, is.Number),
		"repository_url":     s.apiURL("/repos/%s/%s", rp.owner, rp.name),
		"html_url":           fmt.Sprintf("https://github.com/%s/%s/issues/%d", rp.owner, rp.name, is.Number),
		"number":             is.Number,
		"state":              is.State,
		"state_reason":       nil,
		"title":              is.Title,
		"body":               is.Body,
		"user":               user(is.User),
		"labels":             labels,
		"assignee":           nil,
		"assignees":          assignees,
		"milestone":          nil,
		"locked":             false,
		"comments":           is.Comments,
		"created_at":         is.CreatedAt.UTC().Format(time.RFC3339),
		"updated_at":         is.UpdatedAt.UTC().Format(time.RFC3339),
		"closed_at":          timeOrNil(closedAt),
		"author_association": "OWNER",
	}
	if len(assignees) > 0 {
		out["assignee"] = assignees[0]
	}
	if is.Milestone != nil {
		out["milestone"] = map[string]any{"number": *is.Milestone, "title": fmt.Sprintf("v%d", *is.Milestone), "state": "open"}
	}
	if pr := is.PullRequest; pr != nil {
		out["html_url"] = fmt.Sprintf("https://github.com/%s/%s/pull/%d", rp.owner, rp.name, is.Number)
		out["pull_request"] = map[string]any{
			"url":       s.apiURL("/repos/%s/%s/pulls/%d", rp.owner, rp.name, is.Number),
			"html_url":  out["html_url"],
			"merged_at": timeOrNil(pr.MergedAt),
		}
	}
	return out
}

// issueIDBase keeps ids of different repositories apart.
func (rp *repo) issueIDBase() int {
	return 1_000_000 * (len(rp.owner) + len(rp.name))
}

func (s *Server) renderComment(rp *repo, is *Issue, c *Comment) map[string]any {
	return map[string]any{
		"id":                 c.ID,
		"node_id":            fmt.Sprintf("IC_kwDO%d", c.ID),
		"url":                s.apiURL("/repos/%s/%s/issues/comments/%d", rp.owner, rp.name, c.ID),
		"html_url":           fmt.Sprintf("https://github.com/%s/%s/issues/%d#issuecomment-%d", rp.owner, rp.name, is.Number, c.ID),
		"issue_url":          s.apiURL("/repos/%s/%s/issues/%d", rp.owner, rp.name, is.Number),
		"body":               c.Body,
		"user":               user(c.User),
		"created_at":         c.CreatedAt.UTC().Format(time.RFC3339),
		"updated_at":         c.UpdatedAt.UTC().Format(time.RFC3339),
		"author_association": "NONE",
	}
}

func (s *Server) renderPull(rp *repo, is *Issue) map[string]any {
	pr := is.PullRequest
	repoJSON := map[string]any{
		"id": rp.issueIDBase(), "name": rp.name, "full_name": rp.owner + "/" + rp.name,
		"owner": user(rp.owner), "private": false, "default_branch": "main",
		"html_url": fmt.Sprintf("https://github.com/%s/%s", rp.owner, rp.name),
	}
	out := s.renderIssue(rp, is)
	delete(out, "pull_request")
	delete(out, "repository_url")
	fields := map[string]any{
		"url":       s.apiURL("/repos/%s/%s/pulls/%d", rp.owner, rp.name, is.Number),
		"draft":     pr.Draft,
		"merged":    pr.MergedAt != nil,
		"merged_at": timeOrNil(pr.MergedAt),
		"mergeable": true,
		"head": map[string]any{
			"label": rp.owner + ":" + pr.Head, "ref": pr.Head, "sha": cmp.Or(pr.HeadSHA, strings.Repeat("a", 40)),
			"user": user(rp.owner), "repo": repoJSON,
		},
		"base": map[string]any{
			"label": rp.owner + ":" + pr.Base, "ref": pr.Base, "sha": strings.Repeat("b", 40),
			"user": user(rp.owner), "repo": repoJSON,
		},
		"requested_reviewers": []any{},
		"commits":             1, "additions": 10, "deletions": 2, "changed_files": 1,
	}
	for k, v := range fields {
		out[k] = v
	}
	return out
}

// getRepo answers a repository's summary, 404 for one AddRepo did not make.
func (s *Server) getRepo(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	rp := s.repos[strings.ToLower(r.PathValue("owner")+"/"+r.PathValue("repo"))]
	s.mu.Unlock()
	if rp == nil {
		WriteError(w, http.StatusNotFound, "Not Found")
		return
	}
	providertest.WriteJSON(w, http.StatusOK, map[string]any{"name": rp.name, "full_name": rp.owner + "/" + rp.name, "owner": map[string]any{"login": rp.owner}})
}

// checkAssignee answers 204 when the user may be assigned issues of the
// repository (a collaborator), else 404, as GitHub does.
func (s *Server) checkAssignee(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	rp := s.repos[strings.ToLower(r.PathValue("owner")+"/"+r.PathValue("repo"))]
	ok := rp != nil && slices.Contains(rp.collaborators, r.PathValue("login"))
	s.mu.Unlock()
	if !ok {
		WriteError(w, http.StatusNotFound, "Not Found")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
