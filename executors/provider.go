package executors

import (
	"fmt"
)

// Provider is how a provider package registers itself: everything the rest
// of outboxd needs to know about it, so that adding a provider is one
// package plus one line in the list of providers (app.Providers).
type Provider struct {
	// ID is the source id, e.g. "slack". Its configuration is read from
	// providers.<id>.*.
	ID string
	// Name is the display name, e.g. "Slack", shown in the catalog.
	Name string
	// DefaultBaseURL is the default of providers.<id>.base_url.
	DefaultBaseURL string
	// Bucket is the rate bucket the provider's jobs take when a request
	// names none. Configuration may redefine it by name. A zero Name means
	// none.
	Bucket BucketConfig
	// NoCredential says calls take no credential. The zero value, the usual
	// case, has the worker resolve the organization's (or the user's)
	// token before each call, and lists the provider only to those that
	// have one.
	NoCredential bool
	// Guide is markdown an agent reads at the top of the provider's guide,
	// before its actions: what the provider acts as and what to know
	// before calling it.
	Guide string
	// Actions are the provider's actions, in the order they are listed.
	Actions []Action
	// Connect builds what the actions' handlers run on (typically a client
	// holding the checked base URL) from the provider's configuration. It
	// is where a bad configuration is refused, at start-up.
	Connect func(cfg *ProviderConfig) (any, error)
}

// ProviderConfig is a provider's configuration, read generically from
// providers.<id>.*.
type ProviderConfig struct {
	// BaseURL is providers.<id>.base_url: the root of the provider's API.
	// Empty means the provider's public API.
	BaseURL string
}

// New builds the provider's source from its configuration.
func (p Provider) New(cfg *ProviderConfig) (Source, error) {
	if cfg == nil {
		cfg = &ProviderConfig{}
	}
	conn, err := p.Connect(cfg)
	if err != nil {
		return nil, err
	}
	return p.Source(conn), nil
}

// Source returns the provider's source with its actions running on conn,
// a value of the type its actions' handlers take (what Connect returns).
// Provider packages use it to build a source from a configuration of their
// own, with test settings ProviderConfig does not have. A duplicate action
// id panics: it is a programming error.
func (p Provider) Source(conn any) Source {
	s := &providerSource{p: &p, conn: conn, actions: make(map[string]*Action, len(p.Actions))}
	for i := range p.Actions {
		a := &p.Actions[i]
		if _, dup := s.actions[a.Definition.ID]; dup {
			panic(fmt.Sprintf("executors: provider %s defines action %s twice", p.ID, a.Definition.ID))
		}
		s.actions[a.Definition.ID] = a
	}
	return s
}

// Build returns a registry of providers' sources, each built from its
// entry in configs (none when absent) and registered with its bucket and
// its registration, which Registry.Provider returns.
func Build(providers []Provider, configs map[string]ProviderConfig) (*Registry, error) {
	r := NewRegistry()
	for i := range providers {
		p := &providers[i]
		cfg := configs[p.ID]
		s, err := p.New(&cfg)
		if err != nil {
			return nil, err
		}
		r.Add(s, p.Bucket.Name)
		r.providers[p.ID] = p
	}
	return r, nil
}
