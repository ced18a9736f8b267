package catalog_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/domain/catalog"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/flow"
)

// TestNew_ProvidersAsRegistered: the catalog hands out each provider with
// what its registration says (display name, guide, credential need,
// bucket), and a source added to the registry without one with the
// conservative defaults.
func TestNew_ProvidersAsRegistered(t *testing.T) {
	t.Parallel()

	provider := func(id string, noCredential bool) executors.Provider {
		return executors.Provider{
			ID: id, Name: "Name of " + id, Guide: "Guide of " + id, NoCredential: noCredential,
			Bucket: flow.BucketConfig{Name: id + ".api"},
			Actions: []executors.Action{executors.NewAction(executors.Definition{ID: "noop", Tier: executors.TierR0},
				func(struct{}, context.Context, *struct{}, executors.ExecContext) (executors.Result, error) {
					return executors.Result{Data: json.RawMessage(`{}`)}, nil
				})},
			Connect: func(*executors.ProviderConfig) (any, error) { return struct{}{}, nil },
		}
	}
	registry, err := executors.Build([]executors.Provider{provider("keyed", false), provider("open", true)}, nil)
	require.NoError(t, err)
	plain, err := provider("plain", true).New(nil)
	require.NoError(t, err)
	registry.Add(plain, "")

	c := catalog.New(registry)
	ctx := context.Background()

	keyed, err := c.Source(ctx, "org", "keyed")
	require.NoError(t, err)
	require.Equal(t, "Name of keyed", keyed.Name)
	require.Equal(t, "Guide of keyed", keyed.Guide)
	require.True(t, keyed.NeedsCredential)
	require.Equal(t, "keyed.api", keyed.Bucket)
	require.False(t, keyed.OrgRegistered)

	open, err := c.Source(ctx, "org", "open")
	require.NoError(t, err)
	require.False(t, open.NeedsCredential, "NoCredential: the worker resolves no token")

	unregistered, err := c.Source(ctx, "org", "plain")
	require.NoError(t, err)
	require.True(t, unregistered.NeedsCredential, "a source without a registration needs a credential")
	require.Empty(t, unregistered.Name)
	require.Empty(t, unregistered.Bucket)

	_, err = c.Source(ctx, "org", "missing")
	require.ErrorIs(t, err, errs.NotFound)
}

// kind is a kind of org-registered source with one source per
// organization, named after it.
type kind struct{ prefix string }

func (k kind) Prefix() string { return k.prefix }

func (k kind) Bucket() string { return k.prefix + "bucket" }

func (k kind) source(org string) *catalog.Source {
	return &catalog.Source{Source: idSource(k.prefix + org), OrgRegistered: true}
}

func (k kind) List(_ context.Context, org string) ([]*catalog.Source, error) {
	return []*catalog.Source{k.source(org)}, nil
}

func (k kind) Source(_ context.Context, org, id string) (*catalog.Source, error) {
	if id != k.prefix+org {
		return nil, errs.NotFound
	}
	return k.source(org), nil
}

type idSource string

func (s idSource) ID() string { return string(s) }
func (idSource) ListActions(context.Context, executors.ExecContext) ([]executors.Definition, error) {
	return nil, nil
}
func (idSource) Execute(context.Context, string, json.RawMessage, executors.ExecContext) (executors.Result, error) {
	return executors.Result{}, nil
}

// TestKinds: the catalog resolves an id by the prefix of the kind it
// starts with and lists the kinds' sources after the static ones, in the
// order the kinds were registered; prefixes may not overlap.
func TestKinds(t *testing.T) {
	t.Parallel()

	registry, err := executors.Build(nil, nil)
	require.NoError(t, err)
	c := catalog.New(registry)
	require.NoError(t, c.Register(kind{"b:"}))
	require.NoError(t, c.Register(kind{"a:"}))
	require.Error(t, c.Register(kind{"a:x"}), "a prefix another starts with")
	require.Error(t, c.Register(kind{"b"}), "a prefix that starts another")
	require.Equal(t, []string{"b:", "a:"}, c.Prefixes())

	ctx := context.Background()
	src, err := c.Source(ctx, "org1", "a:org1")
	require.NoError(t, err)
	require.Equal(t, "a:org1", src.ID())
	_, err = c.Source(ctx, "org2", "a:org1")
	require.ErrorIs(t, err, errs.NotFound, "another organization's source")
	_, err = c.Source(ctx, "org1", "c:org1")
	require.ErrorIs(t, err, errs.NotFound, "no kind has the prefix")

	all, err := c.List(ctx, "org1")
	require.NoError(t, err)
	var ids []string
	for _, s := range all {
		ids = append(ids, s.ID())
	}
	require.Equal(t, []string{"b:org1", "a:org1"}, ids)
}
