package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/audit"
	"github.com/outboxd/outboxd/internal/domain/auth"
)

// TestSourcesClaim_AuditModes: an action-modes entry names the sources
// whose overrides the replacement changed and shows only their overrides,
// before and after. A token narrowed to github lists its own changes of
// github's overrides (a change, a no-op naming github, a removal) and an
// unclaimed token's change that touched github alone, while Slack has
// overrides in the same scope, and none of them shows anything of
// Slack's; it does not list the changes of Slack's overrides. A token
// narrowed to Slack lists the Slack change only. Without a claim every
// entry is listed and the export verifies.
func TestSourcesClaim_AuditModes(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	gh := b.Token(auth.Claims{Kind: auth.KindUser, Role: auth.RoleAdmin, Sources: auth.OnlySources("github")})
	sl := b.Token(auth.Claims{Kind: auth.KindUser, Role: auth.RoleAdmin, Sources: auth.OnlySources("slack")})
	put := func(token string, modes map[string]string) {
		t.Helper()
		r := b.Do("PUT", "/v1/action-modes", token, modes)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	}
	put(b.Admin(), map[string]string{"slack:send_message": "require_approval", "github:create_issue": "require_approval"})
	put(gh, map[string]string{"github:create_issue": "deny"})
	put(b.Admin(), map[string]string{"slack:send_message": "require_approval", "github:create_issue": "allow"})
	put(gh, map[string]string{"github:create_issue": "allow"}) // changes nothing
	put(b.Admin(), map[string]string{"slack:send_message": "deny", "github:create_issue": "allow"})
	put(gh, map[string]string{})

	type change struct{ Before, After map[string]string }
	list := func(token string) []change {
		t.Helper()
		r := b.Do("GET", "/v1/audit?action=action_modes", token, nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		var page struct {
			Entries []audit.Entry `json:"entries"`
		}
		require.NoError(t, json.Unmarshal(r.Raw, &page))
		out := []change{}
		for i := range page.Entries {
			e := &page.Entries[i]
			require.Equal(t, e.Hash, audit.Hash(e))
			var c change
			require.NoError(t, json.Unmarshal(e.Before, &c.Before))
			require.NoError(t, json.Unmarshal(e.After, &c.After))
			out = append(out, c)
		}
		return out
	}
	github := func(before, after string) change {
		c := change{Before: map[string]string{}, After: map[string]string{}}
		if before != "" {
			c.Before["github:create_issue"] = before
		}
		if after != "" {
			c.After["github:create_issue"] = after
		}
		return c
	}

	// Newest first: the removal, the no-op, the unclaimed change of
	// github's alone, its own change.
	require.Equal(t, []change{
		github("allow", ""), github("allow", "allow"), github("deny", "allow"), github("require_approval", "deny"),
	}, list(gh))
	r := b.Do("GET", "/v1/audit", gh, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.NotContains(t, string(r.Raw), "slack")

	require.Equal(t, []change{{
		Before: map[string]string{"slack:send_message": "require_approval"},
		After:  map[string]string{"slack:send_message": "deny"},
	}}, list(sl))

	every := list(b.Admin())
	require.Len(t, every, 6)
	require.Equal(t, change{Before: map[string]string{}, After: map[string]string{
		"slack:send_message": "require_approval", "github:create_issue": "require_approval",
	}}, every[5], "the first change set both sources' overrides")
	r = b.Do("GET", "/v1/audit/export", b.Admin(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	v, err := audit.VerifyExport(bytes.NewReader(r.Raw))
	require.NoError(t, err)
	require.Equal(t, 6, v.Entries)
}
