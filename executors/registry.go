package executors

import "sort"

// Registry is the set of sources a process knows, keyed by source id, each
// with the rate bucket its jobs take when a request names none.
type Registry struct {
	sources map[string]Source
	buckets map[string]string
	// providers are the registrations of the sources Build added.
	providers map[string]*Provider
}

// NewRegistry returns a registry holding sources, with no default bucket.
// A duplicate id panics: it is a programming error at start-up.
func NewRegistry(sources ...Source) *Registry {
	r := &Registry{sources: make(map[string]Source, len(sources)), buckets: map[string]string{}, providers: map[string]*Provider{}}
	for _, s := range sources {
		r.Add(s, "")
	}
	return r
}

// Add registers s with bucket, the rate bucket its jobs take when a request
// names none ("" for none). A duplicate id panics: it is a programming
// error at start-up.
func (r *Registry) Add(s Source, bucket string) {
	if _, dup := r.sources[s.ID()]; dup {
		panic("executors: duplicate source " + s.ID())
	}
	r.sources[s.ID()] = s
	if bucket != "" {
		r.buckets[s.ID()] = bucket
	}
}

// Source returns the source with the given id.
func (r *Registry) Source(id string) (Source, bool) {
	s, ok := r.sources[id]
	return s, ok
}

// Provider returns the registration of the source id when Build added it
// from a Provider, and false for a source added with Add.
func (r *Registry) Provider(id string) (*Provider, bool) {
	p, ok := r.providers[id]
	return p, ok
}

// Bucket returns the default rate bucket of the source id, "" for none.
func (r *Registry) Bucket(id string) string { return r.buckets[id] }

// IDs returns the registered source ids in sorted order.
func (r *Registry) IDs() []string {
	ids := make([]string, 0, len(r.sources))
	for id := range r.sources {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
