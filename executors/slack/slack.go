// Package slack is the Slack action source. It posts messages through the
// Slack Web API with the token the worker injects at call time, and
// classifies Slack's answers into executors.Error so the worker knows
// whether to retry, snooze or fail.
package slack

import (
	"cmp"
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

// client is what the Slack actions run on: the checked configuration. It
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
	return &client{baseURL: cfg.BaseURL, http: cfg.HTTPClient}, nil
}

// New returns the Slack source (Provider's) on cfg. A nil cfg uses the
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
