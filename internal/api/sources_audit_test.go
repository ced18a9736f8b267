package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
)

// TestSourcesClaim_Audit: the audit log names every source's decisions
// (invocation id, source, action, intent prefix), credentials and action
// modes, so an admin token with a sources claim, even one listing every
// source the organization has, reads neither its listing (with or without
// filters, on any page) nor its export: each is 403 source_not_allowed
// naming none of the entries. An admin token without the claim reads
// both, the Slack decision among them.
func TestSourcesClaim_Audit(t *testing.T) {
	t.Parallel()
	b := sourcesBundle(t, nil)
	slack := pendingOf(t, b, "slack")
	r := b.Do("POST", "/v1/invocations/"+slack+"/approve", b.Admin(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))

	// Without the claim: the Slack decision, its credential and modes.
	r = b.Do("GET", "/v1/audit?action=invocation", b.Admin(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Contains(t, string(r.Raw), slack)
	require.Contains(t, string(r.Raw), `"source_id":"slack"`)
	r = b.Do("GET", "/v1/audit/export", b.Admin(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Contains(t, string(r.Raw), slack)
	require.Contains(t, string(r.Raw), `"action":"credential.store","target_type":"credential","target_id":"slack"`)

	for name, claim := range map[string]auth.SourceClaim{
		"Github": auth.OnlySources("github"),
		"Every":  auth.OnlySources("github", "slack"),
		"None":   auth.OnlySources(),
	} {
		t.Run(name, func(t *testing.T) {
			narrowed := b.Token(auth.Claims{Kind: auth.KindUser, Role: auth.RoleAdmin, Sources: claim})
			for _, path := range []string{
				"/v1/audit", "/v1/audit?action=invocation", "/v1/audit?target_type=credential&target_id=slack",
				"/v1/audit?limit=1&cursor=2", "/v1/audit/export",
			} {
				r := b.Do("GET", path, narrowed, nil)
				e := requireAPIError(t, r, http.StatusForbidden, "source_not_allowed")
				require.Contains(t, e["message"], "the audit log spans every source; use a token without a sources claim", path)
				requireNoEntry(t, r, slack)
			}
		})
	}
}

// requireNoEntry requires r to name no audit entry, nor the invocation id.
func requireNoEntry(t *testing.T, r *apptest.Response, id string) {
	t.Helper()
	require.NotContains(t, string(r.Raw), id)
	require.False(t, strings.Contains(string(r.Raw), `"seq"`), string(r.Raw))
	require.Nil(t, r.Body["entries"], string(r.Raw))
}
