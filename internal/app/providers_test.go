package app

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/demo"
	"github.com/outboxd/outboxd/policy"
)

// TestProviders_EveryActionHasATier: every action of every provider (and
// of the demo source) carries one of the five risk tiers, so none falls
// back to the conservative default by omission.
func TestProviders_EveryActionHasATier(t *testing.T) {
	t.Parallel()

	sources := []executors.Source{demo.New(&demo.Config{})}
	for _, p := range Providers {
		s, err := p.New(&executors.ProviderConfig{})
		require.NoError(t, err, p.ID)
		sources = append(sources, s)
	}
	for _, s := range sources {
		defs, err := s.ListActions(context.Background(), executors.ExecContext{})
		require.NoError(t, err, s.ID())
		require.NotEmpty(t, defs, s.ID())
		for _, d := range defs {
			require.Contains(t, policy.Tiers, d.Tier, "%s.%s has no risk tier", s.ID(), d.ID)
		}
	}
}
