package slack

import (
	"time"

	"github.com/outboxd/outboxd/executors"
)

// Provider registers the Slack source: built from providers.slack.*, its jobs
// take its own rate bucket unless a request names another.
var Provider = executors.Provider{
	ID:             SourceID,
	Name:           "Slack",
	DefaultBaseURL: DefaultBaseURL,
	// Slack's chat.postMessage allows about one message per second per
	// channel, with short bursts.
	Bucket: executors.BucketConfig{Name: "slack.minute", Rate: 60, Interval: time.Minute, Burst: 10, Scope: executors.ScopeOrg},
	Guide: "Messages are posted as the workspace's Slack app, with the Slack token stored for your " +
		"organization (or your user). The app must be a member of a channel to post in it.",
	Actions: []executors.Action{
		executors.WithPreview(executors.NewAction(sendMessageDefinition, (*client).sendMessage), (*client).previewMessage),
	},
	Connect: func(cfg *executors.ProviderConfig) (any, error) {
		return connect(&Config{BaseURL: cfg.BaseURL})
	},
}
