// Package catalog resolves source ids for an organization: the static
// provider sources (Slack, Linear, Sentry, GitHub), the sources added at
// start (the plugins), and the sources of each registered Kind, which an
// organization registers itself (its MCP connectors, its databases).
// The API and the workers resolve through it, so a connector added in one
// process is usable by every other at once.
package catalog

import (
	"context"
	"fmt"
	"strings"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/policy"
)

// Kind is a kind of source organizations register themselves, such as MCP
// connectors or databases: a package under executors/ that owns its
// sources' storage and CRUD. Which database pool each method reads
// through is fixed by the kind: List serves the API's catalog, as the
// caller's organization; Source serves the workers and the invoke path,
// for any organization.
type Kind interface {
	// Prefix starts the id of every source of the kind, such as
	// "connector:"; no other kind's prefix may start with it.
	Prefix() string
	// Bucket names the rate bucket every source of the kind takes by
	// default, such as "connector".
	Bucket() string
	// List returns org's usable sources of the kind.
	List(ctx context.Context, org string) ([]*Source, error)
	// Source resolves the source id, which starts with Prefix, for org:
	// errs.NotFound when org has no usable source of that id.
	Source(ctx context.Context, org, id string) (*Source, error)
}

// Catalog resolves sources per organization.
type Catalog struct {
	static  *executors.Registry
	sources map[string]*Source
	// added are the ids of the sources added with Add, in order.
	added []string
	kinds []Kind
}

// New returns a Catalog of the static sources; Add and Register add the
// others.
func New(static *executors.Registry) *Catalog {
	c := &Catalog{static: static, sources: map[string]*Source{}}
	for _, id := range static.IDs() {
		s, _ := static.Source(id)
		entry := &Source{Source: s, NeedsCredential: true, Bucket: static.Bucket(id)}
		if p, ok := static.Provider(id); ok {
			entry.Name, entry.Guide, entry.NeedsCredential = p.Name, p.Guide, !p.NoCredential
		}
		c.sources[id] = entry
	}
	return c
}

// Add adds a source that is not a provider, such as the plugins, with
// what the rest of the system needs to know about it. A duplicate id is
// an error.
func (c *Catalog) Add(s *Source) error {
	if _, dup := c.sources[s.ID()]; dup {
		return fmt.Errorf("source %s is already registered", s.ID())
	}
	c.sources[s.ID()] = s
	c.added = append(c.added, s.ID())
	return nil
}

// Register adds a kind of org-registered source; List lists the kinds'
// sources in the order they were registered. A prefix that overlaps
// another kind's is an error. Register before the catalog is used.
func (c *Catalog) Register(k Kind) error {
	for _, other := range c.kinds {
		if strings.HasPrefix(k.Prefix(), other.Prefix()) || strings.HasPrefix(other.Prefix(), k.Prefix()) {
			return fmt.Errorf("source kind prefix %q overlaps %q", k.Prefix(), other.Prefix())
		}
	}
	c.kinds = append(c.kinds, k)
	return nil
}

// KindOfBucket returns the id prefix of the registered kind whose
// sources take bucket by default, if one does: a bucket every source of
// that kind takes, in every organization, whether or not it has one.
func (c *Catalog) KindOfBucket(bucket string) (prefix string, ok bool) {
	for _, k := range c.kinds {
		if k.Bucket() == bucket {
			return k.Prefix(), true
		}
	}
	return "", false
}

// Prefixes returns the id prefixes of the registered kinds.
func (c *Catalog) Prefixes() []string {
	out := make([]string, len(c.kinds))
	for i, k := range c.kinds {
		out[i] = k.Prefix()
	}
	return out
}

// CredentialProvider is a provider whose calls take a credential an
// organization stores (PUT /v1/credentials/{integration}).
type CredentialProvider struct {
	Integration string
	// Name is the display name; empty when the id is the name.
	Name string
}

// CredentialProviders lists the providers whose calls take a credential,
// in id order, whether or not an organization has stored one: what an
// admin may store a credential for.
func (c *Catalog) CredentialProviders() []CredentialProvider {
	out := []CredentialProvider{}
	for _, id := range c.static.IDs() {
		if s := c.sources[id]; s.NeedsCredential {
			out = append(out, CredentialProvider{Integration: id, Name: s.Name})
		}
	}
	return out
}

// Static returns the provider sources.
func (c *Catalog) Static() *executors.Registry { return c.static }

// Source returns the source id for org.
func (c *Catalog) Source(ctx context.Context, org, id string) (*Source, error) {
	if s, ok := c.sources[id]; ok {
		return s, nil
	}
	for _, k := range c.kinds {
		if strings.HasPrefix(id, k.Prefix()) {
			return k.Source(ctx, org, id)
		}
	}
	return nil, errs.Errorf(errs.NotFound, "source not found: %s", id)
}

// List returns the static sources, the added ones and the organization's
// sources of each kind, in that order.
func (c *Catalog) List(ctx context.Context, org string) ([]*Source, error) {
	var out []*Source
	for _, id := range append(c.static.IDs(), c.added...) {
		out = append(out, c.sources[id])
	}
	for _, k := range c.kinds {
		srcs, err := k.List(ctx, org)
		if err != nil {
			return nil, err
		}
		out = append(out, srcs...)
	}
	return out, nil
}

// Review is an admin's confirmed mode for a connector tool and the
// definition hash it was confirmed for.
type Review struct {
	Mode string `json:"mode"`
	Hash string `json:"hash"`
}

// Source is a source as the catalog hands it to the rest of the system:
// the source with what policy and the worker need to know about it, so
// that neither asks what kind of source it is.
type Source struct {
	executors.Source
	// Name is the display name; empty when the id is the name.
	Name string
	// Guide is markdown shown at the top of the source's guide, before its
	// actions; empty for none.
	Guide string
	// NeedsCredential says whether calls take a credential, which the worker
	// resolves before each call.
	NeedsCredential bool
	// LocalCredential says its credential is one only outboxd holds (a
	// connector's secret, a database's URL, sealed in outboxd's store when
	// it was registered): the worker reads it from the store even when
	// provider tokens come from a broker.
	LocalCredential bool
	// Bucket is the rate bucket its jobs take when a request names none;
	// "" for none.
	Bucket string
	// OrgRegistered marks a source the organization added itself (an MCP
	// connector, a database). It is listed whether or not a credential is stored for
	// it, and its actions' modes are an admin's to review: until reviewed,
	// an action's mode follows its tier like any other's (a tool its server
	// marks read-only runs, any other waits for a human; an admin denies or
	// reclassifies what it should not); once reviewed, the reviewed mode
	// stands in for the org default and the drift guard applies.
	OrgRegistered bool
	// Reviews are the admin reviews of its actions, by action id.
	Reviews map[string]Review
	// Disabled, when not empty, says why the source's actions are listed
	// but cannot be invoked (plugins while code execution is off).
	Disabled string
}

// Action is one action as the catalog hands it out: its source and its
// definition.
type Action struct {
	Source     *Source
	Definition executors.Definition
}

// Review returns the admin's review of the action, and false when it has
// none.
func (a Action) Review() (Review, bool) {
	r, ok := a.Source.Reviews[a.Definition.ID]
	return r, ok
}

// ReviewDrifted reports whether the action is a reviewed tool of an
// org-registered source whose definition, hashed to hash, changed since
// its review.
func (a Action) ReviewDrifted(hash string) bool {
	if !a.Source.OrgRegistered {
		return false
	}
	review, ok := a.Review()
	return ok && review.Hash != hash
}

// Resolve runs the mode cascade for the action, from its tier. For an
// action of an org-registered source (a connector tool), the mode an admin
// confirmed in review stands in for the org default (an explicit org
// override still wins), and the drift guard applies when the definition
// hash changed since that review; drifted says so. A reviewed allow does
// not make an R3 or R4 tool run unattended: policy.Resolve keeps those for
// a human.
func (a Action) Resolve(in policy.ModeInput) (res policy.Resolution, drifted bool) {
	def := a.Definition
	in.Tier = string(def.Tier)
	if !a.Source.OrgRegistered {
		return policy.Resolve(in), false
	}
	review, reviewed := a.Review()
	if reviewed && in.OrgDefault == "" {
		in.OrgDefault = review.Mode
	}
	res = policy.Resolve(in)
	if !reviewed {
		return res, false
	}
	hash, err := policy.DefinitionHash(def.Params)
	drifted = err != nil || hash != review.Hash
	return policy.ApplyDriftGuard(res, drifted), drifted
}
