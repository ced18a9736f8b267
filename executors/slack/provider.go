package slack

import (
	"time"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/flow"
)

// Provider registers the Slack source: built from providers.slack.*, its jobs
// take its own rate bucket unless a request names another.
var Provider = executors.Provider{
	ID:             SourceID,
	DefaultBaseURL: DefaultBaseURL,
	// Slack's chat.postMessage allows about one message per second per
	// channel, with short bursts.
	Bucket: flow.BucketConfig{Name: "slack.minute", Rate: 60, Interval: time.Minute, Burst: 10, Scope: flow.ScopeOrg},
	New: func(cfg *executors.ProviderConfig) (executors.Source, error) {
		s, err := New(&Config{BaseURL: cfg.BaseURL})
		if err != nil {
			return nil, err
		}
		return s, nil
	},
}
