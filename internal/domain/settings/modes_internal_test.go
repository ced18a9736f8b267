package settings

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/domain/audit"
	"github.com/outboxd/outboxd/policy"
)

// TestModesChange: a replacement of overrides is recorded as the
// overrides of the sources it changed (an override added, removed or set
// to another mode), before and after, naming those sources; another
// source's overrides, unchanged, are neither shown nor named. One that
// changed nothing shows the overrides of the sources its keys named, or
// none.
func TestModesChange(t *testing.T) {
	t.Parallel()
	slack := policy.Modes{"slack:send_message": "deny", "slack:add_reaction": "allow"}
	with := func(m policy.Modes, kv ...string) policy.Modes {
		out := policy.Modes{}
		for k, v := range m {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = policy.Mode(kv[i+1])
		}
		return out
	}
	for _, tc := range []struct {
		name          string
		keys          []string
		before, after policy.Modes
		sources       []string
		wantBefore    policy.Modes
		wantAfter     policy.Modes
	}{
		{"Set", []string{"github:create_issue"},
			with(slack, "github:create_issue", "require_approval", "github:close_issue", "deny"),
			with(slack, "github:create_issue", "deny", "github:close_issue", "deny"), []string{"github"},
			policy.Modes{"github:create_issue": "require_approval", "github:close_issue": "deny"},
			policy.Modes{"github:create_issue": "deny", "github:close_issue": "deny"}},
		{"Added", []string{"github:create_issue"}, slack, with(slack, "github:create_issue", "allow"), []string{"github"},
			policy.Modes{}, policy.Modes{"github:create_issue": "allow"}},
		{"Removed", nil, with(slack, "github:create_issue", "allow"), slack, []string{"github"},
			policy.Modes{"github:create_issue": "allow"}, policy.Modes{}},
		{"Connector", []string{"connector:c-1:search", "slack:send_message"},
			with(slack, "connector:c-2:search", "deny"), with(slack, "connector:c-1:search", "allow", "connector:c-2:search", "deny"),
			[]string{"connector:c-1"}, policy.Modes{}, policy.Modes{"connector:c-1:search": "allow"}},
		{"Both", nil, policy.Modes{}, with(slack, "github:create_issue", "allow"), []string{"github", "slack"},
			policy.Modes{}, with(slack, "github:create_issue", "allow")},
		{"NoOpNamed", []string{"github:create_issue"}, with(slack, "github:create_issue", "allow"), with(slack, "github:create_issue", "allow"),
			[]string{"github"}, policy.Modes{"github:create_issue": "allow"}, policy.Modes{"github:create_issue": "allow"}},
		{"NoOp", nil, slack, slack, nil, policy.Modes{}, policy.Modes{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := audit.Change{Action: "action_modes.replace"}
			modesChange(tc.keys)(&c, tc.before, tc.after)
			require.Equal(t, tc.sources, c.Sources)
			require.Equal(t, tc.wantBefore, c.Before)
			require.Equal(t, tc.wantAfter, c.After)
		})
	}
}
