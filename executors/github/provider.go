package github

import (
	"time"

	"github.com/outboxd/outboxd/executors"
)

// Provider registers the GitHub source: built from providers.github.*, its
// jobs take its own rate bucket unless a request names another.
var Provider = executors.Provider{
	ID:             SourceID,
	Name:           "GitHub",
	DefaultBaseURL: DefaultBaseURL,
	// GitHub allows a token 5,000 REST requests an hour, and its secondary
	// limits refuse bursts of content creation; GitHub's own 403/429 answers
	// drain the bucket for as long as it asks.
	Bucket: executors.BucketConfig{Name: "github.api", Rate: 5000, Interval: time.Hour, Burst: 20, Scope: executors.ScopeOrg},
	Guide: "Issues, comments and pull requests are read and written as the user or app of the GitHub token " +
		"stored for your organization (or your user), in the repositories it may reach. Repositories are " +
		"named by `owner` and `repo`; creates are safe to retry.",
	Actions: actions,
	Connect: func(cfg *executors.ProviderConfig) (any, error) {
		return connect(&Config{BaseURL: cfg.BaseURL})
	},
}
