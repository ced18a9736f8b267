package executors

import "github.com/outboxd/outboxd/internal/flow"

// Provider is how a provider package registers itself: everything the rest
// of outboxd needs to know about it, so that adding a provider is one
// package plus one line in the list of providers (app.Providers).
type Provider struct {
	// ID is the source id, e.g. "slack". Its configuration is read from
	// providers.<id>.*.
	ID string
	// DefaultBaseURL is the default of providers.<id>.base_url.
	DefaultBaseURL string
	// Bucket is the rate bucket the provider's jobs take when a request
	// names none. Configuration may redefine it by name. A zero Name means
	// none.
	Bucket flow.BucketConfig
	// New builds the provider's source from its configuration.
	New func(cfg *ProviderConfig) (Source, error)
}

// ProviderConfig is a provider's configuration, read generically from
// providers.<id>.*.
type ProviderConfig struct {
	// BaseURL is providers.<id>.base_url: the root of the provider's API.
	// Empty means the provider's public API.
	BaseURL string
}

// Build returns a registry of providers' sources, each built from its
// entry in configs (none when absent) and registered with its bucket.
func Build(providers []Provider, configs map[string]ProviderConfig) (*Registry, error) {
	r := NewRegistry()
	for _, p := range providers {
		cfg := configs[p.ID]
		s, err := p.New(&cfg)
		if err != nil {
			return nil, err
		}
		r.Add(s, p.Bucket.Name)
	}
	return r, nil
}
