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
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/outboxd/outboxd/executors"
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
		HTTPClient: cmp.Or(c.HTTPClient, defaultHTTPClient()),
	}
}

func (c *Config) validate() error {
	u, err := url.Parse(c.BaseURL)
	if err != nil {
		return fmt.Errorf("sentry: invalid BaseURL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("sentry: BaseURL %q must use http or https", c.BaseURL)
	}
	if u.Host == "" {
		return fmt.Errorf("sentry: BaseURL %q has no host", c.BaseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.ForceQuery {
		return fmt.Errorf("sentry: BaseURL %q must not have a query or fragment", c.BaseURL)
	}
	if u.User != nil {
		return fmt.Errorf("sentry: BaseURL must not carry credentials")
	}
	return nil
}

// defaultHTTPClient mirrors http.DefaultTransport's settings on a transport
// of its own, so idle connections to Sentry are not shared with, or closed
// by, unrelated code using the default client.
func defaultHTTPClient() *http.Client {
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           dialer.DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          100,
			MaxIdleConnsPerHost:   16,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
		},
	}
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
		return executors.Result{}, &classifiedError{
			classified: &executors.Error{
				Code:    "unknown_action",
				Message: fmt.Sprintf("the sentry source has no action %q", actionID),
			},
			cause: executors.ErrUnknownAction,
		}
	}
	res, err := run(s, ctx, params, ec)
	return res, redactError(err, ec.Token)
}

// classifiedError pairs the classification the worker reads with the error
// that caused it. executors.Error has no Unwrap and lives in a package this
// one does not own, so the pairing happens here: errors.As finds the
// *executors.Error and errors.Is finds the cause. Its text is the
// classification's, which is already free of secrets.
type classifiedError struct {
	classified *executors.Error
	cause      error
}

func (e *classifiedError) Error() string { return e.classified.Error() }

func (e *classifiedError) Unwrap() []error { return []error{e.classified, e.cause} }
