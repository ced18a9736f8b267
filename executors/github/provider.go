package github

import (
	"time"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/flow"
)

// Provider registers the GitHub source: built from providers.github.*, its
// jobs take its own rate bucket unless a request names another.
var Provider = executors.Provider{
	ID:             SourceID,
	DefaultBaseURL: DefaultBaseURL,
	// GitHub allows a token 5,000 REST requests an hour, and its secondary
	// limits refuse bursts of content creation; GitHub's own 403/429 answers
	// drain the bucket for as long as it asks.
	Bucket: flow.BucketConfig{Name: "github.api", Rate: 5000, Interval: time.Hour, Burst: 20, Scope: flow.ScopeOrg},
	New: func(cfg *executors.ProviderConfig) (executors.Source, error) {
		s, err := New(&Config{BaseURL: cfg.BaseURL})
		if err != nil {
			return nil, err
		}
		return s, nil
	},
}
