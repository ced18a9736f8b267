package github

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/httpsource"
)

// Action ids, as they appear in the catalog and in mode keys.
const (
	ActionCreateIssue      = "create_issue"
	ActionCommentOnIssue   = "comment_on_issue"
	ActionGetIssue         = "get_issue"
	ActionListPullRequests = "list_pull_requests"
	ActionGetPullRequest   = "get_pull_request"
)

var (
	//go:embed create_issue.schema.json
	createIssueSchema string
	//go:embed comment_on_issue.schema.json
	commentOnIssueSchema string
	//go:embed get_issue.schema.json
	getIssueSchema string
	//go:embed list_pull_requests.schema.json
	listPullRequestsSchema string
	//go:embed get_pull_request.schema.json
	getPullRequestSchema string
)

const (
	createIssueDescription = "Open an issue in a GitHub repository. Set `owner` and `repo` and a one-line `title`; " +
		"optionally a Markdown `body`, `labels`, `assignees` (logins) and a `milestone` number. Labels that do " +
		"not exist yet are created. The issue is created once even if the call is retried: its body ends with " +
		"a hidden marker (an HTML comment) naming the invocation. On success the provider reference is " +
		"\"owner/repo#number\" and the result is the issue, with its number and html_url."
	commentOnIssueDescription = "Add a comment to a GitHub issue or pull request. Set `owner`, `repo`, " +
		"`issue_number` (a pull request's number works too) and a Markdown `body`. The comment is posted once " +
		"even if the call is retried: its body ends with a hidden marker (an HTML comment) naming the " +
		"invocation. On success the provider reference is the comment's id and the result is the comment, " +
		"with its html_url."
	getIssueDescription = "Get one GitHub issue by its number: title, body, state (open or closed), " +
		"state_reason, labels, assignees, milestone, comment count, author (user.login), created_at, " +
		"updated_at, closed_at and html_url. A pull request is an issue too; it then has a pull_request field."
	listPullRequestsDescription = "List the pull requests of a GitHub repository, newest first unless " +
		"`sort`/`direction` say otherwise. Filter with `state` (open, the default; closed; all), `base` (the " +
		"target branch) and `head` (\"user:branch\"). The result is {\"pull_requests\": [...], \"next_page\": " +
		"n}; each entry has number, title, state, draft, user (login), head_ref, head_sha, base_ref, labels, " +
		"html_url, created_at, updated_at, closed_at and merged_at. When next_page is not null, call again " +
		"with `page` set to it. Use get_pull_request for one pull request in full."
	getPullRequestDescription = "Get one GitHub pull request by its number in full: title, body, state, draft, " +
		"merged, mergeable, head and base (branches and commits), author, requested reviewers, labels, " +
		"commit, addition, deletion and changed-file counts, timestamps and html_url."
)

// actions are GitHub's actions, each with its handler.
var actions = []executors.Action{
	executors.WithPreview(executors.NewAction(executors.Definition{ID: ActionCreateIssue, Description: createIssueDescription, Tier: executors.TierR2, Params: json.RawMessage(createIssueSchema), Delivery: executors.DeliveryReconciled}, (*client).createIssue), (*client).previewCreateIssue),
	executors.NewAction(executors.Definition{ID: ActionCommentOnIssue, Description: commentOnIssueDescription, Tier: executors.TierR2, Params: json.RawMessage(commentOnIssueSchema), Delivery: executors.DeliveryReconciled}, (*client).commentOnIssue),
	executors.NewAction(executors.Definition{ID: ActionGetIssue, Description: getIssueDescription, Tier: executors.TierR1, Params: json.RawMessage(getIssueSchema), Delivery: executors.DeliveryExactlyOnce}, (*client).getIssue),
	executors.NewAction(executors.Definition{ID: ActionListPullRequests, Description: listPullRequestsDescription, Tier: executors.TierR1, Params: json.RawMessage(listPullRequestsSchema), Delivery: executors.DeliveryExactlyOnce}, (*client).listPullRequests),
	executors.NewAction(executors.Definition{ID: ActionGetPullRequest, Description: getPullRequestDescription, Tier: executors.TierR1, Params: json.RawMessage(getPullRequestSchema), Delivery: executors.DeliveryExactlyOnce}, (*client).getPullRequest),
}

// RepoRef names a repository: the params every action has.
type RepoRef struct {
	// Owner is the account (user or organization) owning the repository.
	Owner string `json:"owner"`
	// Repo is the repository's name, without the owner.
	Repo string `json:"repo"`
}

func (r *RepoRef) Check() error {
	for _, f := range []struct{ name, value string }{{"owner", r.Owner}, {"repo", r.Repo}} {
		switch {
		case f.value == "":
			return fmt.Errorf("%s is required", f.name)
		case strings.Trim(f.value, ".") == "":
			// Escaping leaves "." and ".." unchanged, and a server or proxy
			// would resolve them to another endpoint; no name is only dots.
			return fmt.Errorf("%s %q is not a valid name", f.name, f.value)
		}
	}
	return nil
}

func (r *RepoRef) String() string { return r.Owner + "/" + r.Repo }

// CreateIssueParams are the params of create_issue. Their JSON names are
// those of GitHub's create-an-issue body.
type CreateIssueParams struct {
	RepoRef
	// Title is the issue title.
	Title string `json:"title"`
	// Body is the issue body in Markdown.
	Body string `json:"body,omitempty"`
	// Labels are label names to put on the issue.
	Labels []string `json:"labels,omitempty"`
	// Assignees are the logins of the users to assign.
	Assignees []string `json:"assignees,omitempty"`
	// Milestone is the number of the milestone to add the issue to.
	Milestone *int `json:"milestone,omitempty"`
}

func (p *CreateIssueParams) Check() error {
	if err := p.RepoRef.Check(); err != nil {
		return err
	}
	switch {
	case p.Title == "":
		return errors.New("title is required")
	case p.Milestone != nil && *p.Milestone < 1:
		return errors.New("milestone must be a milestone number, at least 1")
	}
	for _, a := range p.Assignees {
		if !validLogin(a) {
			// The preview looks each assignee up by path: ".." would ask
			// for the repository's list of assignees, "x/y" for another
			// endpoint, and find no refusal.
			return fmt.Errorf("assignees: %q is not a valid login (letters, digits and single hyphens between them, at most 39)", a)
		}
	}
	return nil
}

// loginPattern is a GitHub login: letters and digits, with single hyphens
// between them (create_issue.schema.json's assignees say the same).
var loginPattern = regexp.MustCompile(`^[A-Za-z0-9]+(-[A-Za-z0-9]+)*$`)

// validLogin reports whether login can be a GitHub login.
func validLogin(login string) bool {
	return len(login) <= 39 && loginPattern.MatchString(login)
}

// createIssueBody is what create_issue sends.
type createIssueBody struct {
	Title     string   `json:"title"`
	Body      string   `json:"body"`
	Labels    []string `json:"labels,omitempty"`
	Assignees []string `json:"assignees,omitempty"`
	Milestone *int     `json:"milestone,omitempty"`
}

// issueNumberParams and pullNumberParams are IssueParams as get_issue and
// get_pull_request name the number, after GitHub's path parameters.
type (
	issueNumberParams struct {
		RepoRef
		IssueNumber int `json:"issue_number"`
	}
	pullNumberParams struct {
		RepoRef
		PullNumber int `json:"pull_number"`
	}
)

func (p *issueNumberParams) Check() error {
	return checkNumber(&p.RepoRef, "issue_number", p.IssueNumber)
}
func (p *pullNumberParams) Check() error { return checkNumber(&p.RepoRef, "pull_number", p.PullNumber) }

func checkNumber(r *RepoRef, name string, n int) error {
	if err := r.Check(); err != nil {
		return err
	}
	if n < 1 {
		return fmt.Errorf("%s is required and at least 1", name)
	}
	return nil
}

// CommentOnIssueParams are the params of comment_on_issue.
type CommentOnIssueParams struct {
	RepoRef
	// IssueNumber is the number of the issue or pull request.
	IssueNumber int `json:"issue_number"`
	// Body is the comment in Markdown.
	Body string `json:"body"`
}

func (p *CommentOnIssueParams) Check() error {
	if err := checkNumber(&p.RepoRef, "issue_number", p.IssueNumber); err != nil {
		return err
	}
	if p.Body == "" {
		return errors.New("body is required")
	}
	return nil
}

// ListPullRequestsParams are the params of list_pull_requests; their JSON
// names are GitHub's query parameters.
type ListPullRequestsParams struct {
	RepoRef
	State     string `json:"state,omitempty"`
	Head      string `json:"head,omitempty"`
	Base      string `json:"base,omitempty"`
	Sort      string `json:"sort,omitempty"`
	Direction string `json:"direction,omitempty"`
	PerPage   int    `json:"per_page,omitempty"`
	Page      int    `json:"page,omitempty"`
}

// enumerations of list_pull_requests' params; "" is GitHub's default.
var (
	prStates     = map[string]bool{"": true, "open": true, "closed": true, "all": true}
	prSorts      = map[string]bool{"": true, "created": true, "updated": true, "popularity": true, "long-running": true}
	prDirections = map[string]bool{"": true, "asc": true, "desc": true}
)

func (p *ListPullRequestsParams) Check() error {
	if err := p.RepoRef.Check(); err != nil {
		return err
	}
	switch {
	case !prStates[p.State]:
		return fmt.Errorf("state %q is not one of open, closed, all", p.State)
	case !prSorts[p.Sort]:
		return fmt.Errorf("sort %q is not one of created, updated, popularity, long-running", p.Sort)
	case !prDirections[p.Direction]:
		return fmt.Errorf("direction %q is not one of asc, desc", p.Direction)
	case p.PerPage < 0 || p.PerPage > 100:
		return errors.New("per_page must be 1 to 100")
	case p.Page < 0:
		return errors.New("page must be at least 1")
	}
	return nil
}

// query is p as GitHub's query parameters, defaults left out.
func (p *ListPullRequestsParams) query() url.Values {
	q := url.Values{}
	for name, value := range map[string]string{"state": p.State, "head": p.Head, "base": p.Base, "sort": p.Sort, "direction": p.Direction} {
		if value != "" {
			q.Set(name, value)
		}
	}
	if p.PerPage > 0 {
		q.Set("per_page", strconv.Itoa(p.PerPage))
	}
	if p.Page > 0 {
		q.Set("page", strconv.Itoa(p.Page))
	}
	return q
}

// pullSummary is one entry of list_pull_requests' result: the fields an
// agent picks a pull request by, without the repositories GitHub repeats
// in every entry.
type pullSummary struct {
	Number    int        `json:"number"`
	Title     string     `json:"title"`
	State     string     `json:"state"`
	Draft     bool       `json:"draft"`
	User      string     `json:"user"`
	HeadRef   string     `json:"head_ref"`
	HeadSHA   string     `json:"head_sha"`
	BaseRef   string     `json:"base_ref"`
	Labels    []string   `json:"labels"`
	HTMLURL   string     `json:"html_url"`
	CreatedAt *time.Time `json:"created_at"`
	UpdatedAt *time.Time `json:"updated_at"`
	ClosedAt  *time.Time `json:"closed_at"`
	MergedAt  *time.Time `json:"merged_at"`
}

// pullAnswer is the part of GitHub's pull request object a pullSummary is
// made of.
type pullAnswer struct {
	Number int    `json:"number"`
	Title  string `json:"title"`
	State  string `json:"state"`
	Draft  bool   `json:"draft"`
	User   *struct {
		Login string `json:"login"`
	} `json:"user"`
	Head struct {
		Ref string `json:"ref"`
		SHA string `json:"sha"`
	} `json:"head"`
	Base struct {
		Ref string `json:"ref"`
	} `json:"base"`
	Labels []struct {
		Name string `json:"name"`
	} `json:"labels"`
	HTMLURL   string     `json:"html_url"`
	CreatedAt *time.Time `json:"created_at"`
	UpdatedAt *time.Time `json:"updated_at"`
	ClosedAt  *time.Time `json:"closed_at"`
	MergedAt  *time.Time `json:"merged_at"`
}

func (a *pullAnswer) summary() pullSummary {
	s := pullSummary{
		Number: a.Number, Title: a.Title, State: a.State, Draft: a.Draft,
		HeadRef: a.Head.Ref, HeadSHA: a.Head.SHA, BaseRef: a.Base.Ref, Labels: []string{},
		HTMLURL: a.HTMLURL, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt, ClosedAt: a.ClosedAt, MergedAt: a.MergedAt,
	}
	if a.User != nil {
		s.User = a.User.Login
	}
	for _, l := range a.Labels {
		s.Labels = append(s.Labels, l.Name)
	}
	return s
}

// listPullRequestsData is list_pull_requests' result.
type listPullRequestsData struct {
	PullRequests []pullSummary `json:"pull_requests"`
	NextPage     *int          `json:"next_page"`
}

func (s *client) createIssue(ctx context.Context, p *CreateIssueParams, ec executors.ExecContext) (executors.Result, error) {
	mark := marker(ec.IdempotencyKey)
	if ec.Retry && mark != "" {
		found, err := s.findIssue(ctx, ec, &p.RepoRef, mark)
		if err != nil {
			return executors.Result{}, err
		}
		if found != nil {
			return issueResult(&p.RepoRef, found, true)
		}
	}

	body, err := json.Marshal(createIssueBody{
		Title: p.Title, Body: withMarker(p.Body, mark),
		Labels: p.Labels, Assignees: p.Assignees, Milestone: p.Milestone,
	})
	if err != nil {
		return executors.Result{}, fmt.Errorf("github: encoding create_issue body: %w", err)
	}
	ans, err := s.api.Do(ctx, ec, &httpsource.Request{
		Method:   http.MethodPost,
		Segments: []string{"repos", p.Owner, p.Repo, "issues"},
		Body:     body,
		Subject:  "issues of " + p.RepoRef.String(),
	})
	if err != nil {
		return executors.Result{}, err
	}
	return issueResult(&p.RepoRef, ans.Body, false)
}

// issueResult is the result of create_issue: the issue, referred to as
// owner/repo#number.
func issueResult(repo *RepoRef, issue json.RawMessage, conflict bool) (executors.Result, error) {
	var fields struct {
		Number int `json:"number"`
	}
	if json.Unmarshal(issue, &fields) != nil || fields.Number < 1 {
		// The issue may exist: a retry finds it by its marker.
		return executors.Result{}, &executors.Error{
			Code:      "invalid_response",
			Message:   "GitHub answered create_issue without an issue number",
			Retryable: true,
		}
	}
	return executors.Result{Data: issue, ProviderRef: fmt.Sprintf("%s#%d", repo, fields.Number), Conflict: conflict}, nil
}

func (s *client) commentOnIssue(ctx context.Context, p *CommentOnIssueParams, ec executors.ExecContext) (executors.Result, error) {
	subject := fmt.Sprintf("issue #%d of %s", p.IssueNumber, &p.RepoRef)
	mark := marker(ec.IdempotencyKey)
	if ec.Retry && mark != "" {
		found, err := s.findComment(ctx, ec, &p.RepoRef, p.IssueNumber, subject, mark)
		if err != nil {
			return executors.Result{}, err
		}
		if found != nil {
			return commentResult(found, true)
		}
	}

	body, err := json.Marshal(map[string]string{"body": withMarker(p.Body, mark)})
	if err != nil {
		return executors.Result{}, fmt.Errorf("github: encoding comment_on_issue body: %w", err)
	}
	ans, err := s.api.Do(ctx, ec, &httpsource.Request{
		Method:   http.MethodPost,
		Segments: []string{"repos", p.Owner, p.Repo, "issues", strconv.Itoa(p.IssueNumber), "comments"},
		Body:     body,
		Subject:  subject,
	})
	if err != nil {
		return executors.Result{}, err
	}
	return commentResult(ans.Body, false)
}

// commentResult is the result of comment_on_issue: the comment, referred
// to by its id.
func commentResult(comment json.RawMessage, conflict bool) (executors.Result, error) {
	var fields struct {
		ID int64 `json:"id"`
	}
	if json.Unmarshal(comment, &fields) != nil || fields.ID < 1 {
		// The comment may exist: a retry finds it by its marker.
		return executors.Result{}, &executors.Error{
			Code:      "invalid_response",
			Message:   "GitHub answered comment_on_issue without a comment id",
			Retryable: true,
		}
	}
	return executors.Result{Data: comment, ProviderRef: strconv.FormatInt(fields.ID, 10), Conflict: conflict}, nil
}

func (s *client) getIssue(ctx context.Context, p *issueNumberParams, ec executors.ExecContext) (executors.Result, error) {
	ans, err := s.api.Do(ctx, ec, &httpsource.Request{
		Method:   http.MethodGet,
		Segments: []string{"repos", p.Owner, p.Repo, "issues", strconv.Itoa(p.IssueNumber)},
		Subject:  fmt.Sprintf("issue #%d of %s", p.IssueNumber, &p.RepoRef),
	})
	if err != nil {
		return executors.Result{}, err
	}
	return executors.Result{Data: ans.Body}, nil
}

func (s *client) getPullRequest(ctx context.Context, p *pullNumberParams, ec executors.ExecContext) (executors.Result, error) {
	ans, err := s.api.Do(ctx, ec, &httpsource.Request{
		Method:   http.MethodGet,
		Segments: []string{"repos", p.Owner, p.Repo, "pulls", strconv.Itoa(p.PullNumber)},
		Subject:  fmt.Sprintf("pull request #%d of %s", p.PullNumber, &p.RepoRef),
	})
	if err != nil {
		return executors.Result{}, err
	}
	return executors.Result{Data: ans.Body}, nil
}

func (s *client) listPullRequests(ctx context.Context, p *ListPullRequestsParams, ec executors.ExecContext) (executors.Result, error) {
	ans, err := s.api.Do(ctx, ec, &httpsource.Request{
		Method:   http.MethodGet,
		Segments: []string{"repos", p.Owner, p.Repo, "pulls"},
		Query:    p.query(),
		Subject:  "pull requests of " + p.RepoRef.String(),
	})
	if err != nil {
		return executors.Result{}, err
	}
	var pulls []pullAnswer
	if err := json.Unmarshal(ans.Body, &pulls); err != nil {
		return executors.Result{}, &executors.Error{
			Code:      "invalid_response",
			Message:   "GitHub answered list_pull_requests with something other than a list of pull requests",
			Retryable: true,
		}
	}
	data := listPullRequestsData{PullRequests: make([]pullSummary, 0, len(pulls)), NextPage: nextPage(ans.Header)}
	for i := range pulls {
		data.PullRequests = append(data.PullRequests, pulls[i].summary())
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return executors.Result{}, fmt.Errorf("github: encoding list_pull_requests result: %w", err)
	}
	return executors.Result{Data: raw}, nil
}
