package sentry

import (
	"time"

	"github.com/outboxd/outboxd/executors"
)

// Provider registers the Sentry source: built from providers.sentry.*, its jobs
// take its own rate bucket unless a request names another.
var Provider = executors.Provider{
	ID:             SourceID,
	Name:           "Sentry",
	DefaultBaseURL: DefaultBaseURL,
	// Sentry: conservative against its per-organization limits.
	Bucket: executors.BucketConfig{Name: "sentry.api", Rate: 10, Interval: time.Second, Burst: 20, Scope: executors.ScopeOrg},
	Guide: "Issues and events are read and triaged with the Sentry token stored for your organization " +
		"(or your user); it sees the projects its scopes and teams allow. Start from list_issues, whose " +
		"issue ids the other actions take.",
	Actions: actions,
	Connect: func(cfg *executors.ProviderConfig) (any, error) {
		return connect(&Config{BaseURL: cfg.BaseURL})
	},
}
