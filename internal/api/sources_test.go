package api_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
)

// TestSourcesClaim_Matrix: a token without a sources claim may use every
// source; a token whose claim is present may use only what it lists, so
// "sources": [] allows nothing. Each claim is tried on an invoke (sandbox
// token), an envelope and a batch item (service token), the catalog (a
// session's, and the org's with a user token) and the guides. What is
// refused records nothing, and nothing reaches Slack.
func TestSourcesClaim_Matrix(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-claims")
	b.StoreToken("linear", "lin_api_claims_token", "api_key")

	for _, tc := range []struct {
		name    string
		claim   auth.SourceClaim
		allowed []string // of slack and linear
	}{
		{"Missing", auth.SourceClaim{}, []string{"linear", "slack"}},
		{"Empty", auth.OnlySources(), nil},
		{"One", auth.OnlySources("linear"), []string{"linear"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			session := "session-claims-" + strings.ToLower(tc.name)
			sandbox := b.Token(auth.Claims{Kind: auth.KindSandbox, SessionID: session, Sources: tc.claim})
			service := b.Token(auth.Claims{Kind: auth.KindService, Sources: tc.claim})
			owner := b.Token(auth.Claims{Kind: auth.KindUser, Role: auth.RoleOwner, Sources: tc.claim})
			slackAllowed := len(tc.allowed) == 2
			before := countRows(t, b, `SELECT count(*) FROM action_invocations`)
			created := 0

			// slackCall is recorded with status when Slack is allowed, and
			// refused otherwise.
			slackCall := func(t *testing.T, r *apptest.Response, status int) {
				t.Helper()
				if !slackAllowed {
					requireAPIError(t, r, http.StatusForbidden, "source_not_allowed")
					return
				}
				require.Equal(t, status, r.Status, string(r.Raw))
				created++
			}
			t.Run("Invoke", func(t *testing.T) {
				slackCall(t, b.Do("POST", "/v1/sessions/"+session+"/actions/invoke", sandbox,
					map[string]any{"integration": "slack", "action": "send_message", "params": message}), http.StatusAccepted)
			})
			t.Run("Envelope", func(t *testing.T) {
				slackCall(t, b.Do("POST", "/v1/envelopes", service, envelope("claims-"+tc.name, nil)), http.StatusCreated)
			})
			t.Run("BatchItem", func(t *testing.T) {
				r := b.Do("POST", "/v1/envelopes/batch", service, map[string]any{"envelopes": []any{envelope("claims-batch-"+tc.name, nil)}})
				require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
				item := r.Body["envelopes"].([]any)[0].(map[string]any)
				if slackAllowed {
					require.Equal(t, true, item["created"], string(r.Raw))
					created++
				} else {
					require.Equal(t, "source_not_allowed", item["error"].(map[string]any)["code"], string(r.Raw))
				}
			})
			t.Run("Catalog", func(t *testing.T) {
				for _, path := range []struct{ path, token string }{
					{"/v1/sessions/" + session + "/actions/available", sandbox},
					{"/v1/actions/available", owner},
				} {
					r := b.Do("GET", path.path, path.token, nil)
					require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
					var actionSources, listed []string
					for _, a := range r.Body["actions"].([]any) {
						actionSources = append(actionSources, a.(map[string]any)["source"].(string))
					}
					for _, s := range r.Body["sources"].([]any) {
						listed = append(listed, s.(map[string]any)["source"].(string))
					}
					require.ElementsMatch(t, tc.allowed, slices.Compact(slices.Sorted(slices.Values(actionSources))), path.path)
					require.ElementsMatch(t, tc.allowed, listed, path.path)
				}
			})
			t.Run("Guides", func(t *testing.T) {
				for _, source := range []string{"linear", "slack"} {
					r := b.Do("GET", "/v1/sessions/"+session+"/actions/guide/"+source, sandbox, nil)
					if slices.Contains(tc.allowed, source) {
						require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
						require.Contains(t, string(r.Raw), "# "+source+" actions")
					} else {
						requireAPIError(t, r, http.StatusNotFound, "not_found")
					}
				}
			})
			require.Equal(t, before+created, countRows(t, b, `SELECT count(*) FROM action_invocations`))
		})
	}
	require.Equal(t, 3, countRows(t, b, `SELECT count(*) FROM action_invocations`), "only the token without a claim recorded anything")
	require.Empty(t, b.Slack.Requests())
}
