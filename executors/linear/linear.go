// Package linear is the Linear action source. It reads and writes issues and
// comments through Linear's GraphQL API with the token the worker injects at
// call time, and classifies Linear's answers, HTTP and GraphQL alike, into
// executors.Error so the worker knows whether to retry, snooze or fail.
//
// create_issue and add_comment are safe to retry: each sends a client-chosen
// id derived from the invocation's idempotency key (see StableID), so a retry
// after a lost answer meets Linear's "already exists" and is reported as the
// existing object (its id alone when the token cannot read it back) with
// Result.Conflict set.
package linear

import (
	"cmp"
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
// and Linear refuses to create the object twice, marked as version 4:
// Linear takes a client-chosen id only "in UUID v4 format".
func StableID(actionID, idempotencyKey string) string {
	id := uuid.NewSHA1(stableIDNamespace, []byte(actionID+":"+idempotencyKey))
	id[6] = id[6]&0x0f | 0x40 // version 4; the variant stays RFC 4122's
	return id.String()
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

// client is what the Linear actions run on: the checked configuration. It
// holds configuration only, so one client serves every organization and is
// safe for concurrent use.
type client struct {
	baseURL string
	http    *http.Client
}

// connect checks cfg, filled with its defaults, and returns the client of
// the actions.
func connect(cfg *Config) (*client, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	// A mutation answered with a redirect is not made a GET.
	return &client{baseURL: cfg.BaseURL, http: httpsource.KeepingMethod(cfg.HTTPClient)}, nil
}

// New returns the Linear source (Provider's) on cfg. A nil cfg uses the
// defaults. Failures of its Execute are *executors.Error (reachable with
// errors.As); when a failure has an underlying cause, such as the caller's
// context or ErrUnknownAction, errors.Is finds that too. No failure's text
// contains the token.
func New(cfg *Config) (executors.Source, error) {
	c, err := connect(cfg)
	if err != nil {
		return nil, err
	}
	return Provider.Source(c), nil
}
