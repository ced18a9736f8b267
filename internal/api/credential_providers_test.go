package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
)

// TestCredentials_ProvidersOfAFreshOrganization: an organization with no
// credential stored learns every provider it may store one for (the
// catalog lists none of them yet), and its first credential is stored.
func TestCredentials_ProvidersOfAFreshOrganization(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	providers := []any{
		map[string]any{"integration": "github", "name": "GitHub"},
		map[string]any{"integration": "linear", "name": "Linear"},
		map[string]any{"integration": "sentry", "name": "Sentry"},
		map[string]any{"integration": "slack", "name": "Slack"},
	}

	r := b.Do("GET", "/v1/credentials", b.Admin(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Empty(t, r.Body["credentials"])
	require.Equal(t, providers, r.Body["providers"], "every provider taking a credential, in id order, though none is stored")
	require.Empty(t, b.Do("GET", "/v1/actions/available", b.Admin(), nil).Body["actions"], "the catalog lists none of them yet")

	// The first credential: stored, and the list of providers is the same.
	r = b.Do("PUT", "/v1/credentials/sentry", b.Admin(), map[string]any{"token": "sntrys_first_credential"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	r = b.Do("GET", "/v1/credentials", b.Owner(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Len(t, r.Body["credentials"], 1)
	require.Equal(t, providers, r.Body["providers"])
	require.NotEmpty(t, b.Do("GET", "/v1/actions/available", b.Admin(), nil).Body["actions"], "sentry is in the catalog now")

	// Another organization still has none, and the same providers.
	other := b.Token(auth.Claims{Org: "org-fresh", Kind: auth.KindUser, Role: auth.RoleOwner})
	r = b.Do("GET", "/v1/credentials", other, nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Empty(t, r.Body["credentials"])
	require.Equal(t, providers, r.Body["providers"])

	requireAPIError(t, b.Do("GET", "/v1/credentials", b.Member(), nil), http.StatusForbidden, "forbidden")
}

// TestCatalog_IncludeUnavailable: with include=unavailable an admin is
// also listed the actions of the providers with no credential stored,
// disabled, to set their modes before the credential is stored; the
// catalog an agent sees is unchanged, and nobody else may ask for it.
func TestCatalog_IncludeUnavailable(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-include-unavailable")
	b.SetModes(map[string]string{"sentry:update_issue": "deny"})

	listing := func(t *testing.T, path, token string) (map[string]map[string]any, map[string]map[string]any) {
		t.Helper()
		r := b.Do("GET", path, token, nil)
		require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
		actions, sources := map[string]map[string]any{}, map[string]map[string]any{}
		for _, a := range r.Body["actions"].([]any) {
			action := a.(map[string]any)
			actions[action["source"].(string)+":"+action["action"].(string)] = action
		}
		for _, s := range r.Body["sources"].([]any) {
			source := s.(map[string]any)
			sources[source["source"].(string)] = source
		}
		return actions, sources
	}

	for _, path := range []string{"/v1/actions/available", sessionActions + "available"} {
		token := b.Admin()
		if path != "/v1/actions/available" {
			token = b.Sandbox()
		}
		actions, sources := listing(t, path, token)
		require.Contains(t, actions, "slack:send_message")
		require.NotContains(t, actions, "sentry:update_issue", "%s: without a credential, not in the catalog", path)
		require.NotContains(t, sources, "sentry", path)
	}

	for _, token := range []string{b.Admin(), b.Owner()} {
		actions, sources := listing(t, "/v1/actions/available?include=unavailable", token)
		update := actions["sentry:update_issue"]
		require.NotNil(t, update, "an admin sees the actions of a provider with no credential")
		require.Equal(t, true, update["disabled"])
		require.Equal(t, "deny", update["mode"], "with the mode set for it")
		require.Equal(t, "org_default", update["mode_source"])
		require.Contains(t, actions, "github:create_issue")
		require.Contains(t, actions, "linear:create_issue")
		require.Equal(t, "no_credential", sources["sentry"]["status"])
		require.Contains(t, sources["sentry"]["error"], "no credential")
		require.Equal(t, "ok", sources["slack"]["status"])
		require.Nil(t, actions["slack:send_message"]["disabled"], "a provider with a credential is not disabled")
	}

	requireAPIError(t, b.Do("GET", "/v1/actions/available?include=unavailable", b.Member(), nil), http.StatusForbidden, "forbidden")
	requireAPIError(t, b.Do("GET", sessionActions+"available?include=unavailable", b.Sandbox(), nil), http.StatusForbidden, "forbidden")
	requireAPIError(t, b.Do("GET", "/v1/actions/available?include=everything", b.Admin(), nil), http.StatusBadRequest, "invalid_request")

	// Stored, the provider is available, and no longer disabled.
	b.StoreToken("sentry", "sntrys_now_stored", "")
	actions, sources := listing(t, "/v1/actions/available?include=unavailable", b.Admin())
	require.Nil(t, actions["sentry:update_issue"]["disabled"])
	require.Equal(t, "ok", sources["sentry"]["status"])
	actions, _ = listing(t, sessionActions+"available", b.Sandbox())
	require.Contains(t, actions, "sentry:update_issue")
}
