package app

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/plugin"
)

// TestPlugins_CannotOverrideACoreActionOrSource: against the real
// providers, a plugin taking a core action's name or a source's id is
// refused at load, the error naming both.
func TestPlugins_CannotOverrideACoreActionOrSource(t *testing.T) {
	t.Parallel()
	registry, err := executors.Build(Providers, nil)
	require.NoError(t, err)
	for name, want := range map[string]string{
		"send_message":  "core action slack.send_message",
		"update_issue":  "core action linear.update_issue",
		"sentry":        "source sentry",
		"connector":     "source connector",
		"list_projects": "",
	} {
		dir := t.TempDir()
		require.NoError(t, os.MkdirAll(filepath.Join(dir, name), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name, "action.json"), []byte(`{"name": "`+name+`", "riskTier": "R1"}`), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name, "execute"), []byte("#!/bin/sh\necho '{}'\n"), 0o755))
		src, err := loadPlugins(&plugin.Config{Dir: dir}, registry)
		if want == "" {
			require.NoError(t, err, name)
			require.NotNil(t, src)
			continue
		}
		require.ErrorContains(t, err, `plugin action "`+name+`"`)
		require.ErrorContains(t, err, want)
	}
}
