package api_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/domain/auth"
)

// writesBundle runs outboxd with Slack and GitHub credentials and action
// modes, two connectors and two databases; the first of each is in the
// claim of the narrowed token it returns, an admin's narrowed to github
// and those two.
func writesBundle(t *testing.T) (b *apptest.Bundle, narrowed string, conns, connSources, dbs, dbSources [2]string) {
	t.Helper()
	b = apptest.Start(t, nil)
	b.StoreSlackToken("xoxb-sources-writes")
	b.StoreToken("github", "ghp_sourceswrites0123456789abcdefghijklm", "")
	b.SetModes(map[string]string{"slack:send_message": "require_approval", "github:create_issue": "require_approval"})
	for i, name := range []string{"mine", "theirs"} {
		r := b.Do("POST", "/v1/connectors", b.Owner(), map[string]any{"name": name, "url": newMCPServer(t).URL, "transport": "remote_http"})
		require.Equal(t, http.StatusCreated, r.Status, string(r.Raw))
		conn := r.Body["connector"].(map[string]any)
		conns[i], connSources[i] = conn["id"].(string), conn["source_id"].(string)
		dbs[i], dbSources[i] = createDatabase(t, b, map[string]any{"name": name, "url": "postgres://reader:pw-writes@db.example.com/" + name})
	}
	narrowed = b.Token(auth.Claims{Kind: auth.KindUser, Role: auth.RoleAdmin, Sources: auth.OnlySources("github", connSources[0], dbSources[0])})
	return b, narrowed, conns, connSources, dbs, dbSources
}

// TestSourcesClaim_Writes: an admin token narrowed to github, a connector
// and a database changes nothing of another source: each write naming one
// (its action modes, credential, connector, database), creating a source
// and any webhook write is a 403 source_not_allowed that leaves every
// table as it was (no row, no audit entry). A token without the claim
// makes each of them.
func TestSourcesClaim_Writes(t *testing.T) {
	t.Parallel()
	b, narrowed, conns, connSources, dbs, dbSources := writesBundle(t)
	hook := createDisabledWebhook(t, b, b.Owner())
	conn, db := "/v1/connectors/"+conns[1], "/v1/databases/"+dbs[1]
	for _, tc := range []struct {
		name, method, path string
		body               any
		// admin is what a token without the claim gets, 0 not tried.
		admin int
	}{
		{"ModesOfSlack", "PUT", "/v1/action-modes", map[string]string{"slack:send_message": "allow"}, http.StatusOK},
		{"ModesWithOneOfSlack", "PUT", "/v1/action-modes", map[string]string{"github:create_issue": "allow", "slack:send_message": "deny"}, http.StatusOK},
		{"ModesOfAConnector", "PUT", "/v1/action-modes", map[string]string{connSources[1] + ":search": "allow"}, http.StatusOK},
		{"AutomationModes", "PUT", "/v1/automations/automation-1/action-modes", map[string]string{"slack:send_message": "allow"}, http.StatusOK},
		{"PutCredential", "PUT", "/v1/credentials/slack", map[string]string{"token": "xoxb-replaced"}, http.StatusOK},
		{"DeleteUserCredential", "DELETE", "/v1/credentials/slack?user_id=u-1", nil, 0},
		{"DeleteDatabaseCredential", "DELETE", "/v1/credentials/" + dbSources[1], nil, 0},
		{"CreateConnector", "POST", "/v1/connectors", map[string]any{"name": "new", "url": "https://mcp.example.com/new"}, http.StatusCreated},
		{"GetConnector", "GET", conn, nil, http.StatusOK},
		{"PatchConnector", "PATCH", conn, map[string]any{"enabled": false}, http.StatusOK},
		{"ValidateConnector", "POST", conn + "/validate", nil, http.StatusOK},
		{"ConnectorTools", "GET", conn + "/tools", nil, http.StatusOK},
		{"ReviewConnectorTools", "PUT", conn + "/tools", map[string]any{"search": "allow"}, http.StatusOK},
		{"CreateDatabase", "POST", "/v1/databases", map[string]any{"name": "new", "url": "postgres://reader:pw@db.example.com/new"}, http.StatusCreated},
		{"GetDatabase", "GET", db, nil, http.StatusOK},
		{"PatchDatabase", "PATCH", db, map[string]any{"max_rows": 7}, http.StatusOK},
		{"PatchDatabaseBySourceID", "PATCH", "/v1/databases/" + dbSources[1], map[string]any{"max_rows": 8}, http.StatusOK},
		{"TestDatabase", "POST", db + "/test", nil, http.StatusOK},
		{"CreateWebhook", "POST", "/v1/webhooks", map[string]any{"url": "https://hooks.example.com/new", "events": []string{"action_completed"}}, http.StatusCreated},
		{"PatchWebhook", "PATCH", "/v1/webhooks/" + hook, map[string]any{"description": "changed"}, http.StatusOK},
		{"RotateWebhookSecret", "POST", "/v1/webhooks/" + hook + "/rotate-secret", nil, http.StatusOK},
		// Deletions last: the token without the claim deletes.
		{"DeleteWebhook", "DELETE", "/v1/webhooks/" + hook, nil, http.StatusNoContent},
		{"DeleteConnector", "DELETE", conn, nil, http.StatusNoContent},
		{"DeleteDatabase", "DELETE", db, nil, http.StatusNoContent},
		{"DeleteCredential", "DELETE", "/v1/credentials/slack", nil, http.StatusNoContent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := databaseDigest(t, b)
			r := b.Do(tc.method, tc.path, narrowed, tc.body)
			requireAPIError(t, r, http.StatusForbidden, "source_not_allowed")
			require.Equal(t, before, databaseDigest(t, b), "nothing changed")
			if tc.admin != 0 {
				r = b.Do(tc.method, tc.path, b.Admin(), tc.body)
				require.Equal(t, tc.admin, r.Status, string(r.Raw))
			}
		})
	}
}

// TestSourcesClaim_WritesOfItsSources: the narrowed token lists only its
// sources' action modes, credentials, connectors and databases, and
// changes them; replacing action modes keeps the other sources' as they
// were. Webhooks it reads.
func TestSourcesClaim_WritesOfItsSources(t *testing.T) {
	t.Parallel()
	b, narrowed, conns, connSources, dbs, dbSources := writesBundle(t)
	hook := createDisabledWebhook(t, b, b.Owner())
	ok := func(r *apptest.Response, status int) *apptest.Response {
		t.Helper()
		require.Equal(t, status, r.Status, string(r.Raw))
		return r
	}
	field := func(r *apptest.Response, list, key string) []string {
		t.Helper()
		var out []string
		for _, item := range r.Body[list].([]any) {
			out = append(out, item.(map[string]any)[key].(string))
		}
		return out
	}

	// Listings.
	modes := ok(b.Do("GET", "/v1/action-modes", narrowed, nil), http.StatusOK)
	require.Equal(t, map[string]any{"github:create_issue": "require_approval"}, modes.Body)
	creds := ok(b.Do("GET", "/v1/credentials", narrowed, nil), http.StatusOK)
	// A database's URL is kept as its source's credential.
	require.ElementsMatch(t, []string{"github", dbSources[0]}, field(creds, "credentials", "integration"))
	require.Equal(t, []string{"github"}, field(creds, "providers", "integration"))
	require.ElementsMatch(t, []string{"github", "slack", dbSources[0], dbSources[1]},
		field(ok(b.Do("GET", "/v1/credentials", b.Admin(), nil), http.StatusOK), "credentials", "integration"))
	require.Equal(t, []string{connSources[0]}, field(ok(b.Do("GET", "/v1/connectors", narrowed, nil), http.StatusOK), "connectors", "source_id"))
	require.Len(t, field(ok(b.Do("GET", "/v1/connectors", b.Admin(), nil), http.StatusOK), "connectors", "source_id"), 2)
	require.Equal(t, []string{dbSources[0]}, field(ok(b.Do("GET", "/v1/databases", narrowed, nil), http.StatusOK), "databases", "source_id"))
	require.Len(t, field(ok(b.Do("GET", "/v1/databases", b.Admin(), nil), http.StatusOK), "databases", "source_id"), 2)
	require.Equal(t, []string{hook}, field(ok(b.Do("GET", "/v1/webhooks", narrowed, nil), http.StatusOK), "webhooks", "id"))
	ok(b.Do("GET", "/v1/webhooks/"+hook, narrowed, nil), http.StatusOK)
	none := b.Token(auth.Claims{Kind: auth.KindUser, Role: auth.RoleAdmin, Sources: auth.OnlySources()})
	require.Empty(t, ok(b.Do("GET", "/v1/action-modes", none, nil), http.StatusOK).Body, `"sources": [] sees no action mode`)

	// Action modes: its own replaced, the others kept; the ETag guards
	// every override.
	r := ok(b.Do("PUT", "/v1/action-modes", narrowed, map[string]string{"github:create_issue": "allow", connSources[0] + ":search": "deny"}), http.StatusOK)
	require.Equal(t, map[string]any{"github:create_issue": "allow", connSources[0] + ":search": "deny"}, r.Body)
	etag := r.Header.Get("ETag")
	require.Equal(t, map[string]any{"github:create_issue": "allow", connSources[0] + ":search": "deny", "slack:send_message": "require_approval"},
		ok(b.Do("GET", "/v1/action-modes", b.Owner(), nil), http.StatusOK).Body)
	b.SetModes(map[string]string{"github:create_issue": "allow", connSources[0] + ":search": "deny", "slack:send_message": "deny"})
	r = b.Do("PUT", "/v1/action-modes", narrowed, map[string]string{}, "If-Match", etag)
	requireAPIError(t, r, http.StatusPreconditionFailed, "precondition_failed")
	ok(b.Do("PUT", "/v1/action-modes", narrowed, map[string]string{}), http.StatusOK)
	require.Equal(t, map[string]any{"slack:send_message": "deny"}, ok(b.Do("GET", "/v1/action-modes", b.Owner(), nil), http.StatusOK).Body)
	ok(b.Do("PUT", "/v1/automations/automation-1/action-modes", narrowed, map[string]string{"github:create_issue": "deny"}), http.StatusOK)

	// Credentials, connectors, databases of its sources.
	ok(b.Do("PUT", "/v1/credentials/github", narrowed, map[string]string{"token": "ghp_sourceswritesreplaced0123456789abcdefg"}), http.StatusOK)
	conn, db := "/v1/connectors/"+conns[0], "/v1/databases/"+dbs[0]
	ok(b.Do("GET", conn, narrowed, nil), http.StatusOK)
	ok(b.Do("PATCH", conn, narrowed, map[string]any{"enabled": false}), http.StatusOK)
	ok(b.Do("PATCH", conn, narrowed, map[string]any{"enabled": true}), http.StatusOK)
	ok(b.Do("POST", conn+"/validate", narrowed, nil), http.StatusOK)
	ok(b.Do("GET", conn+"/tools", narrowed, nil), http.StatusOK)
	ok(b.Do("PUT", conn+"/tools", narrowed, map[string]any{"search": "allow"}), http.StatusOK)
	ok(b.Do("GET", db, narrowed, nil), http.StatusOK)
	ok(b.Do("PATCH", db, narrowed, map[string]any{"max_rows": 7}), http.StatusOK)
	ok(b.Do("POST", db+"/test", narrowed, nil), http.StatusOK)
	ok(b.Do("DELETE", conn, narrowed, nil), http.StatusNoContent)
	ok(b.Do("DELETE", db, narrowed, nil), http.StatusNoContent)
	ok(b.Do("DELETE", "/v1/credentials/github", narrowed, nil), http.StatusNoContent)

	// An unknown connector or database is not found, as without the claim.
	requireAPIError(t, b.Do("PATCH", conn, narrowed, map[string]any{"enabled": false}), http.StatusNotFound, "not_found")
	requireAPIError(t, b.Do("DELETE", db, narrowed, nil), http.StatusNotFound, "not_found")
}
