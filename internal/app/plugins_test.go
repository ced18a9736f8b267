package app

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/plugin"
	"github.com/outboxd/outboxd/internal/domain/catalog"
	"github.com/outboxd/outboxd/internal/domain/errs"
)

// prefixKind is a kind of org-registered source with no sources: only
// its prefix matters here.
type prefixKind string

func (k prefixKind) Prefix() string { return string(k) }
func (prefixKind) Bucket() string   { return "" }
func (prefixKind) List(context.Context, string) ([]*catalog.Source, error) {
	return nil, nil
}
func (prefixKind) Source(context.Context, string, string) (*catalog.Source, error) {
	return nil, errs.NotFound
}

// TestPlugins_CannotOverrideACoreActionOrSource: against the real
// providers, a plugin taking a core action's name, a source's id or a
// registered kind's prefix is refused at load, the error naming both; a
// plugin that takes none of them is added to the catalog.
func TestPlugins_CannotOverrideACoreActionOrSource(t *testing.T) {
	t.Parallel()
	registry, err := executors.Build(Providers, nil)
	require.NoError(t, err)
	for name, want := range map[string]string{
		"send_message":  "core action slack.send_message",
		"update_issue":  "core action linear.update_issue",
		"sentry":        "source sentry",
		"connector":     "source connector",
		"warehouse":     "source warehouse",
		"list_projects": "",
	} {
		sources := catalog.New(registry)
		for _, k := range []prefixKind{"connector:", "warehouse:"} {
			require.NoError(t, sources.Register(k))
		}
		dir := t.TempDir()
		require.NoError(t, os.MkdirAll(filepath.Join(dir, name), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name, "action.json"), []byte(`{"name": "`+name+`", "riskTier": "R1"}`), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name, "execute"), []byte("#!/bin/sh\necho '{}'\n"), 0o755))
		err := addPlugins(&plugin.Config{Dir: dir}, sources)
		if want == "" {
			require.NoError(t, err, name)
			_, err := sources.Source(context.Background(), "org", plugin.SourceID)
			require.NoError(t, err, "the plugin source is in the catalog")
			continue
		}
		require.ErrorContains(t, err, `plugin action "`+name+`"`)
		require.ErrorContains(t, err, want)
	}
}
