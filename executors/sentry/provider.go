package sentry

import (
	"time"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/flow"
)

// Provider registers the Sentry source: built from providers.sentry.*, its jobs
// take its own rate bucket unless a request names another.
var Provider = executors.Provider{
	ID:             SourceID,
	DefaultBaseURL: DefaultBaseURL,
	// Sentry: conservative against its per-organization limits.
	Bucket: flow.BucketConfig{Name: "sentry.api", Rate: 10, Interval: time.Second, Burst: 20, Scope: flow.ScopeOrg},
	New: func(cfg *executors.ProviderConfig) (executors.Source, error) {
		s, err := New(&Config{BaseURL: cfg.BaseURL})
		if err != nil {
			return nil, err
		}
		return s, nil
	},
}
