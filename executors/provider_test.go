package executors_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/internal/flow"
)

// stubSource is a source with an id and nothing else.
type stubSource struct{ id, baseURL string }

func (s stubSource) ID() string { return s.id }

func (s stubSource) ListActions(context.Context, executors.ExecContext) ([]executors.Definition, error) {
	return nil, nil
}

func (s stubSource) Execute(context.Context, string, json.RawMessage, executors.ExecContext) (executors.Result, error) {
	return executors.Result{}, nil
}

func TestBuild(t *testing.T) {
	t.Parallel()

	provider := func(id, bucket string) executors.Provider {
		return executors.Provider{
			ID:     id,
			Bucket: flow.BucketConfig{Name: bucket},
			New: func(cfg *executors.ProviderConfig) (executors.Source, error) {
				if cfg.BaseURL == "bad" {
					return nil, errors.New("bad base URL")
				}
				return stubSource{id: id, baseURL: cfg.BaseURL}, nil
			},
		}
	}

	t.Run("RegistersSourcesWithTheirConfigAndBucket", func(t *testing.T) {
		t.Parallel()

		r, err := executors.Build(
			[]executors.Provider{provider("acme", "acme.api"), provider("other", "")},
			map[string]executors.ProviderConfig{"acme": {BaseURL: "http://acme.test"}},
		)
		require.NoError(t, err)
		require.Equal(t, []string{"acme", "other"}, r.IDs())
		s, ok := r.Source("acme")
		require.True(t, ok)
		require.Equal(t, stubSource{id: "acme", baseURL: "http://acme.test"}, s)
		require.Equal(t, "acme.api", r.Bucket("acme"))
		require.Empty(t, r.Bucket("other"))
	})

	t.Run("ConfigError", func(t *testing.T) {
		t.Parallel()

		_, err := executors.Build([]executors.Provider{provider("acme", "")}, map[string]executors.ProviderConfig{"acme": {BaseURL: "bad"}})
		require.EqualError(t, err, "bad base URL")
	})
}
