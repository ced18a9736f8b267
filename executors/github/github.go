// Package github is the GitHub action source. It creates and comments on
// issues and reads issues and pull requests through GitHub's REST API with
// the token the worker injects at call time, and classifies GitHub's
// answers, its rate limits included, into executors.Error so the worker
// knows whether to retry, snooze or fail.
//
// GitHub takes no idempotency key, so the create actions put a marker
// derived from the idempotency key (the invocation id) in what they create,
// as an HTML comment GitHub does not render, and a retry looks for it before
// creating again: an answer lost after GitHub acted never creates twice.
package github

import (
	"cmp"
	"net/http"
	"strings"
	"time"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/httpsource"
)

const (
	// SourceID is the id of this source in the registry and in mode keys.
	SourceID = "github"

	// DefaultBaseURL is the root of GitHub's REST API on github.com.
	DefaultBaseURL = "https://api.github.com"
)

// Config configures a Source.
type Config struct {
	// BaseURL is the root of GitHub's REST API; requests go to paths such as
	// <BaseURL>/repos/{owner}/{repo}/issues. Defaults to DefaultBaseURL.
	// GitHub Enterprise Server uses https://<host>/api/v3; tests point it at
	// a loopback server.
	BaseURL string

	// HTTPClient sends requests to GitHub. Defaults to a client with its own
	// pooled transport and no overall timeout: deadlines come from the
	// context passed to Execute.
	HTTPClient *http.Client

	// Now is the clock rate-limit resets are measured against. Defaults to
	// time.Now.
	Now func() time.Time
}

// WithDefaults returns a copy of c with unset fields filled in.
func (c *Config) WithDefaults() *Config {
	if c == nil {
		c = &Config{}
	}
	now := c.Now
	if now == nil {
		now = time.Now
	}
	return &Config{
		BaseURL:    strings.TrimRight(cmp.Or(c.BaseURL, DefaultBaseURL), "/"),
		HTTPClient: cmp.Or(c.HTTPClient, httpsource.NewClient()),
		Now:        now,
	}
}

func (c *Config) validate() error {
	_, err := httpsource.CheckBaseURL(SourceID, c.BaseURL)
	return err
}

// client is what the GitHub actions run on: the checked configuration. It
// holds configuration only, so one client serves every organization and is
// safe for concurrent use.
type client struct {
	// api sends the calls to GitHub's REST API.
	api *httpsource.REST
	// now is the clock rate-limit resets are measured against.
	now func() time.Time
}

// connect checks cfg, filled with its defaults, and returns the client of
// the actions.
func connect(cfg *Config) (*client, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &client{now: cfg.Now}
	c.api = &httpsource.REST{
		Provider: "GitHub",
		Source:   SourceID,
		BaseURL:  cfg.BaseURL,
		// A write answered with a redirect is not made a read.
		HTTP: httpsource.KeepingMethod(cfg.HTTPClient),
		Header: map[string]string{
			"Accept":               "application/vnd.github+json",
			"X-GitHub-Api-Version": apiVersion,
			"User-Agent":           userAgent,
		},
		MaxBytes: maxResponseBytes,
		// A method value: telling GitHub's rate limits apart needs the
		// client's clock.
		StatusError: c.statusError,
	}
	return c, nil
}

// New returns the GitHub source (Provider's) on cfg. A nil cfg uses the
// defaults. Failures of its Execute are *executors.Error (reachable with
// errors.As); when a failure has an underlying cause, such as the caller's
// context or ErrUnknownAction, errors.Is finds that too.
func New(cfg *Config) (executors.Source, error) {
	c, err := connect(cfg)
	if err != nil {
		return nil, err
	}
	return Provider.Source(c), nil
}
