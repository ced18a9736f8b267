package linear

import (
	"time"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/flow"
)

// Provider registers the Linear source: built from providers.linear.*, its jobs
// take its own rate bucket unless a request names another.
var Provider = executors.Provider{
	ID:             SourceID,
	DefaultBaseURL: DefaultBaseURL,
	// Linear: 1,500 requests per hour per API key.
	Bucket: flow.BucketConfig{Name: "linear.api", Rate: 1500, Interval: time.Hour, Burst: 25, Scope: flow.ScopeOrg},
	New: func(cfg *executors.ProviderConfig) (executors.Source, error) {
		s, err := New(&Config{BaseURL: cfg.BaseURL})
		if err != nil {
			return nil, err
		}
		return s, nil
	},
}
