package linear

import (
	"time"

	"github.com/outboxd/outboxd/executors"
)

// Provider registers the Linear source: built from providers.linear.*, its jobs
// take its own rate bucket unless a request names another.
var Provider = executors.Provider{
	ID:             SourceID,
	Name:           "Linear",
	DefaultBaseURL: DefaultBaseURL,
	// Linear: 1,500 requests per hour per API key.
	Bucket: executors.BucketConfig{Name: "linear.api", Rate: 1500, Interval: time.Hour, Burst: 25, Scope: executors.ScopeOrg},
	Guide: "Issues and comments are read and written as the user or app of the Linear token stored for " +
		"your organization (or your user). Ids are Linear's UUIDs, as list_issues and get_issue return them; " +
		"creates are safe to retry.",
	Actions: []executors.Action{
		executors.NewAction(listIssuesDefinition, (*client).listIssues),
		executors.NewAction(getIssueDefinition, (*client).getIssue),
		executors.WithPreview(executors.NewAction(createIssueDefinition, (*client).createIssue), (*client).previewCreateIssue),
		executors.WithPreview(executors.NewAction(updateIssueDefinition, (*client).updateIssue), (*client).previewUpdateIssue),
		executors.NewAction(addCommentDefinition, (*client).addComment),
	},
	Connect: func(cfg *executors.ProviderConfig) (any, error) {
		return connect(&Config{BaseURL: cfg.BaseURL})
	},
}
