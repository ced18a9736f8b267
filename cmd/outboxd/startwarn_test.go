package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

// auth.max_lifetime has no default (it would refuse `outboxd dev`'s
// 30-day tokens): `outboxd serve` without it warns once, naming the key
// and the risk; with it, not at all.
func TestServe_WarnsOnceWithoutMaxLifetime(t *testing.T) {
	t.Parallel()
	const warning = "auth.max_lifetime is not set"
	for _, tc := range []struct {
		name  string
		env   []string
		warns int
	}{
		{"unset", nil, 1},
		{"set", []string{"OUTBOXD_AUTH_MAX_LIFETIME=720h"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			addr := freeAddr(t)
			p := outboxd(t, append(baseEnv(pgtest.URL(t), "http://127.0.0.1:1"), tc.env...), "serve", "--http-addr", addr)
			waitReady(t, addr, p)
			p.stop(t)
			out := p.output.String()
			require.Equal(t, tc.warns, strings.Count(out, warning), out)
			if tc.warns > 0 {
				require.Contains(t, out, "level=WARN")
				require.Contains(t, out, "key=auth.max_lifetime env=OUTBOXD_AUTH_MAX_LIFETIME")
			}
		})
	}
}
