package app

import (
	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/database"
	"github.com/outboxd/outboxd/executors/github"
	"github.com/outboxd/outboxd/executors/linear"
	"github.com/outboxd/outboxd/executors/mcp"
	"github.com/outboxd/outboxd/executors/plugin"
	"github.com/outboxd/outboxd/executors/sentry"
	"github.com/outboxd/outboxd/executors/slack"
	"github.com/outboxd/outboxd/internal/domain/flow"
	"github.com/outboxd/outboxd/internal/domain/relay/webhook"
)

// Providers are the provider sources outboxd offers, each registered by its
// own package. Adding a provider is a package and a line here.
var Providers = []executors.Provider{
	slack.Provider,
	linear.Provider,
	sentry.Provider,
	github.Provider,
}

// DefaultBuckets are the rate buckets outboxd starts with: each provider's,
// the connectors', the databases', the plugins' and the webhook deliveries'.
// Configuration may redefine any of them by name or add more.
func DefaultBuckets() []flow.BucketConfig {
	var out []flow.BucketConfig
	for _, p := range Providers {
		if p.Bucket.Name != "" {
			out = append(out, p.Bucket)
		}
	}
	return append(out, mcp.Bucket, database.Bucket, plugin.Bucket, webhook.Bucket)
}
