package main

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/viper"
	"github.com/stretchr/testify/require"
)

// TestConfig_EveryKeyReachesTheConfig changes each key in turn and checks
// that the configuration app runs with changes too, so no key of defaults
// (and of the example, which the loader holds to it) is read by nothing.
func TestConfig_EveryKeyReachesTheConfig(t *testing.T) {
	t.Parallel()

	// Read by the commands themselves, not part of app.Config.
	commandKeys := map[string]bool{"database.url": true, "database.max_conns": true, "log.level": true, "log.format": true}
	load := func(key string, value any) *viper.Viper {
		v := viper.New()
		for k, d := range defaults {
			v.SetDefault(k, d)
		}
		if key != "" {
			v.Set(key, value)
		}
		return v
	}
	base, err := appConfig(load("", nil))
	require.NoError(t, err)
	for key, def := range defaults {
		if commandKeys[key] {
			continue
		}
		var changed any
		switch d := def.(type) {
		case time.Duration:
			changed = d + time.Second
		case int:
			changed = d + 1
		case float64:
			changed = d + 0.5
		case bool:
			changed = !d
		case string:
			changed = d + "x"
		case []any:
			changed = []any{map[string]any{"name": "x", "rate": 1, "burst": 1}}
			if key == "plugins.command_allowlist" {
				changed = []any{"x"}
			}
		default:
			t.Fatalf("%s: no change for a default of type %T", key, def)
		}
		cfg, err := appConfig(load(key, changed))
		require.NoError(t, err, key)
		require.False(t, reflect.DeepEqual(base, cfg), "%s is not read into app.Config", key)
	}
}

// TestConfig_DocumentedDefaults checks the tables of configuration keys in
// the README and docs/ against defaults: a row "| `key` | `value` | ... |"
// (or "| `a.b` / `c` | `1` / `2` | ... |" for a.b and a.c) must show the
// key's default, and "—" stands for an empty one.
func TestConfig_DocumentedDefaults(t *testing.T) {
	t.Parallel()

	files := []string{"../../README.md"}
	err := filepath.WalkDir("../../docs", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return err
	})
	require.NoError(t, err)

	found := 0
	for _, file := range files {
		f, err := os.Open(file)
		require.NoError(t, err)
		sc := bufio.NewScanner(f)
		for line := 1; sc.Scan(); line++ {
			cols := strings.Split(sc.Text(), "|")
			if len(cols) < 4 || !strings.HasPrefix(strings.TrimSpace(cols[1]), "`") {
				continue
			}
			keys := strings.Split(strings.TrimSpace(cols[1]), " / ")
			values := strings.Split(strings.TrimSpace(cols[2]), " / ")
			first := strings.Trim(keys[0], "`")
			prefix, _, _ := strings.Cut(first, ".")
			for i, k := range keys {
				key := strings.Trim(k, "`")
				if i > 0 && !strings.Contains(key, ".") {
					key = prefix + "." + key
				}
				def, ok := defaults[key]
				if !ok || i >= len(values) {
					continue
				}
				where := fmt.Sprintf("%s:%d: %s", file, line, key)
				doc, quoted := backticked(values[i])
				switch {
				case strings.TrimSpace(values[i]) == "—":
					require.Empty(t, fmt.Sprint(def), "%s is documented without a default, but has one", where)
				case !quoted:
					continue // "see the example"
				case reflect.TypeOf(def) == reflect.TypeOf(time.Duration(0)):
					d, err := time.ParseDuration(doc)
					require.NoError(t, err, where)
					require.Equal(t, def, d, "%s: the documented default is not the code's", where)
				default:
					require.Equal(t, fmt.Sprint(def), doc, "%s: the documented default is not the code's", where)
				}
				found++
			}
		}
		require.NoError(t, sc.Err())
		require.NoError(t, f.Close())
	}
	require.NotZero(t, found, "no table of configuration keys found in README.md or docs/ (rows \"| `key` | `default` | ... |\")")
}

// backticked returns the first `...` of s.
func backticked(s string) (string, bool) {
	_, rest, ok := strings.Cut(s, "`")
	if !ok {
		return "", false
	}
	v, _, ok := strings.Cut(rest, "`")
	return v, ok
}
