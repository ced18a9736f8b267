// Package linear is the Linear action source. It reads and writes issues and
// comments through Linear's GraphQL API with the token the worker injects at
// call time, and classifies Linear's answers, HTTP and GraphQL alike, into
// executors.Error so the worker knows whether to retry, snooze or fail.
//
// create_issue and add_comment are safe to retry: each sends a client-chosen
// id derived from the invocation's idempotency key (see StableID), so a retry
// after a lost answer meets Linear's "already exists" and is reported as the
// existing object with Result.Conflict set.
package linear

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/google/uuid"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/httpsource"
)

const (
	// SourceID is the id of this source in the registry and in mode keys.
	SourceID = "linear"

	// ActionListIssues lists issues, optionally of one team or project.
	ActionListIssues = "list_issues"
	// ActionGetIssue reads one issue.
	ActionGetIssue = "get_issue"
	// ActionCreateIssue creates an issue.
	ActionCreateIssue = "create_issue"
	// ActionUpdateIssue changes fields of an issue.
	ActionUpdateIssue = "update_issue"
	// ActionAddComment comments on an issue.
	ActionAddComment = "add_comment"

	// DefaultBaseURL is Linear's GraphQL endpoint.
	DefaultBaseURL = "https://api.linear.app/graphql"
)

// stableIDNamespace is the UUID namespace of the ids StableID derives. It is
// fixed forever: changing it would make a retry after an upgrade create a
// second object instead of finding the first.
var stableIDNamespace = uuid.MustParse("60b254ad-e3f4-4e60-bf2d-751c204d81bb")

// StableID returns the id create_issue and add_comment send to Linear for
// the invocation with idempotencyKey. It is a name-based (SHA-1) UUID of the
// action id and the key, so every retry of one invocation sends the same id
// and Linear refuses to create the object twice.
func StableID(actionID, idempotencyKey string) string {
	return uuid.NewSHA1(stableIDNamespace, []byte(actionID+":"+idempotencyKey)).String()
}

// Config configures a Source.
type Config struct {
	// BaseURL is Linear's GraphQL endpoint; every operation is POSTed to it.
	// Defaults to DefaultBaseURL. Tests point it at a loopback server.
	BaseURL string

	// HTTPClient sends requests to Linear. Defaults to a client with its own
	// pooled transport and no overall timeout: deadlines come from the
	// context passed to Execute.
	HTTPClient *http.Client
}

// WithDefaults returns a copy of c with unset fields filled in.
func (c *Config) WithDefaults() *Config {
	if c == nil {
		c = &Config{}
	}
	return &Config{
		BaseURL:    cmp.Or(c.BaseURL, DefaultBaseURL),
		HTTPClient: cmp.Or(c.HTTPClient, httpsource.NewClient()),
	}
}

func (c *Config) validate() error {
	_, err := httpsource.CheckBaseURL(SourceID, c.BaseURL)
	return err
}

// Source is the Linear action source. It holds configuration only, so one
// Source serves every organization and is safe for concurrent use.
type Source struct {
	baseURL string
	client  *http.Client
}

var _ executors.Source = (*Source)(nil)

// New returns a Linear source. A nil cfg uses the defaults.
func New(cfg *Config) (*Source, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Source{baseURL: cfg.BaseURL, client: cfg.HTTPClient}, nil
}

// ID returns SourceID.
func (s *Source) ID() string { return SourceID }

// ListActions returns the actions Linear offers. They do not depend on the
// caller, so ec is ignored and no request is made. The definitions are built
// afresh on each call, so a caller that mutates one cannot corrupt another's.
func (s *Source) ListActions(_ context.Context, _ executors.ExecContext) ([]executors.Definition, error) {
	return []executors.Definition{
		listIssuesDefinition(),
		getIssueDefinition(),
		createIssueDefinition(),
		updateIssueDefinition(),
		addCommentDefinition(),
	}, nil
}

// Execute runs one action. Failures are *executors.Error (reachable with
// errors.As); when a failure has an underlying cause, such as the caller's
// context or ErrUnknownAction, errors.Is finds that too. No failure's text
// contains ec.Token.
func (s *Source) Execute(ctx context.Context, actionID string, params json.RawMessage, ec executors.ExecContext) (executors.Result, error) {
	var (
		res executors.Result
		err error
	)
	switch actionID {
	case ActionListIssues:
		res, err = s.listIssues(ctx, params, ec)
	case ActionGetIssue:
		res, err = s.getIssue(ctx, params, ec)
	case ActionCreateIssue:
		res, err = s.createIssue(ctx, params, ec)
	case ActionUpdateIssue:
		res, err = s.updateIssue(ctx, params, ec)
	case ActionAddComment:
		res, err = s.addComment(ctx, params, ec)
	default:
		return executors.Result{}, httpsource.UnknownAction(SourceID, actionID)
	}
	if err != nil {
		return executors.Result{}, httpsource.Scrub(err, ec.Token)
	}
	return res, nil
}

// decodeParams decodes an action's params strictly. The worker validates
// params against the schema before executing; this guards the request
// against a caller that did not. Required fields are checked by the caller.
func decodeParams[T any](actionID string, params json.RawMessage) (T, error) {
	var p T
	if trimmed := bytes.TrimSpace(params); len(trimmed) == 0 || trimmed[0] != '{' {
		return p, invalidParams(actionID, "params must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, invalidParams(actionID, err.Error())
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return p, invalidParams(actionID, "unexpected data after the JSON object")
	}
	return p, nil
}

func invalidParams(actionID, msg string) *executors.Error {
	return &executors.Error{
		Code:    "invalid_params",
		Message: fmt.Sprintf("invalid %s params: %s", actionID, msg),
	}
}
