// Package sentry is the Sentry action source. It reads and triages Sentry
// issues through Sentry's REST API with the token the worker injects at call
// time, and classifies Sentry's answers into executors.Error so the worker
// knows whether to retry, snooze or fail.
package sentry

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/httpsource"
)

const (
	// SourceID is the id of this source in the registry and in mode keys.
	SourceID = "sentry"

	// DefaultBaseURL is the root of Sentry's REST API on sentry.io.
	DefaultBaseURL = "https://sentry.io/api/0"
)

// Config configures a Source.
type Config struct {
	// BaseURL is the root of Sentry's REST API; requests go to paths such as
	// <BaseURL>/issues/{issue_id}/. Defaults to DefaultBaseURL. Self-hosted
	// Sentry uses https://<host>/api/0; tests point it at a loopback server.
	BaseURL string

	// HTTPClient sends requests to Sentry. Defaults to a client with its own
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
		BaseURL:    strings.TrimRight(cmp.Or(c.BaseURL, DefaultBaseURL), "/"),
		HTTPClient: cmp.Or(c.HTTPClient, httpsource.NewClient()),
	}
}

func (c *Config) validate() error {
	u, err := httpsource.CheckBaseURL(SourceID, c.BaseURL)
	if err != nil {
		return err
	}
	if u.ForceQuery {
		return fmt.Errorf("sentry: BaseURL %q must not have a query or fragment", c.BaseURL)
	}
	if u.User != nil {
		return fmt.Errorf("sentry: BaseURL must not carry credentials")
	}
	return nil
}

// Source is the Sentry action source. It holds configuration only, so one
// Source serves every organization and is safe for concurrent use.
type Source struct {
	baseURL string
	client  *http.Client
}

var _ executors.Source = (*Source)(nil)

// New returns a Sentry source. A nil cfg uses the defaults.
func New(cfg *Config) (*Source, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Source{baseURL: cfg.BaseURL, client: cfg.HTTPClient}, nil
}

// ID returns SourceID.
func (s *Source) ID() string { return SourceID }

// ListActions returns the actions Sentry offers. They do not depend on the
// caller, so ec is ignored and no request is made.
func (s *Source) ListActions(_ context.Context, _ executors.ExecContext) ([]executors.Definition, error) {
	return definitions(), nil
}

// Execute runs one action. Failures are *executors.Error (reachable with
// errors.As); when a failure has an underlying cause, such as the caller's
// context or ErrUnknownAction, errors.Is finds that too.
func (s *Source) Execute(ctx context.Context, actionID string, params json.RawMessage, ec executors.ExecContext) (executors.Result, error) {
	run, ok := actions[actionID]
	if !ok {
		return executors.Result{}, httpsource.UnknownAction(SourceID, actionID)
	}
	res, err := run(s, ctx, params, ec)
	// The escaped forms cover a token that reached the URL through params.
	return res, httpsource.Scrub(err, ec.Token, url.PathEscape(ec.Token), url.QueryEscape(ec.Token))
}
