package executors

import "sort"

// Registry is the set of sources a process knows, keyed by source id.
type Registry struct {
	sources map[string]Source
}

// NewRegistry returns a registry holding sources. A duplicate id panics: it
// is a programming error at start-up.
func NewRegistry(sources ...Source) *Registry {
	r := &Registry{sources: make(map[string]Source, len(sources))}
	for _, s := range sources {
		if _, dup := r.sources[s.ID()]; dup {
			panic("executors: duplicate source " + s.ID())
		}
		r.sources[s.ID()] = s
	}
	return r
}

// Source returns the source with the given id.
func (r *Registry) Source(id string) (Source, bool) {
	s, ok := r.sources[id]
	return s, ok
}

// IDs returns the registered source ids in sorted order.
func (r *Registry) IDs() []string {
	ids := make([]string, 0, len(r.sources))
	for id := range r.sources {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
