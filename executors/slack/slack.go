// Package slack is the Slack action source. It posts messages through the
// Slack Web API with the token the worker injects at call time, and
// classifies Slack's answers into executors.Error so the worker knows
// whether to retry, snooze or fail.
package slack

import (
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/httpsource"
)

const (
	// SourceID is the id of this source in the registry and in mode keys.
	SourceID = "slack"

	// ActionSendMessage posts a message with chat.postMessage.
	ActionSendMessage = "send_message"

	// DefaultBaseURL is the Slack Web API root.
	DefaultBaseURL = "https://slack.com/api"
)

// Config configures a Source.
type Config struct {
	// BaseURL is the Slack Web API root; requests go to
	// <BaseURL>/chat.postMessage. Defaults to DefaultBaseURL. Tests point it
	// at a loopback server.
	BaseURL string

	// HTTPClient sends requests to Slack. Defaults to a client with its own
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
	_, err := httpsource.CheckBaseURL(SourceID, c.BaseURL)
	return err
}

// Source is the Slack action source. It holds configuration only, so one
// Source serves every organization and is safe for concurrent use.
type Source struct {
	baseURL string
	client  *http.Client
}

var _ executors.Source = (*Source)(nil)

// New returns a Slack source. A nil cfg uses the defaults.
func New(cfg *Config) (*Source, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Source{baseURL: cfg.BaseURL, client: cfg.HTTPClient}, nil
}

// ID returns SourceID.
func (s *Source) ID() string { return SourceID }

// ListActions returns the actions Slack offers. They do not depend on the
// caller, so ec is ignored and no request is made.
func (s *Source) ListActions(_ context.Context, _ executors.ExecContext) ([]executors.Definition, error) {
	return []executors.Definition{sendMessageDefinition()}, nil
}

// Execute runs one action. Failures are *executors.Error (reachable with
// errors.As); when a failure has an underlying cause, such as the caller's
// context or ErrUnknownAction, errors.Is finds that too.
func (s *Source) Execute(ctx context.Context, actionID string, params json.RawMessage, ec executors.ExecContext) (executors.Result, error) {
	switch actionID {
	case ActionSendMessage:
		return s.sendMessage(ctx, params, ec)
	default:
		return executors.Result{}, httpsource.UnknownAction(SourceID, actionID)
	}
}
