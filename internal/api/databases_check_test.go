package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors/database/databasetest"
	"github.com/outboxd/outboxd/internal/app/apptest"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

// TestDatabase_Test runs list_tables on a registered database on demand:
// a good URL is reachable with its tables counted, a wrong password is
// reported without the URL, and nothing is saved either way.
func TestDatabase_Test(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	tg := databasetest.NewTarget(t)
	id, _ := createDatabase(t, b, map[string]any{"name": "good", "url": tg.URL})
	r := b.Do("POST", "/v1/databases/"+id+"/test", b.Admin(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, true, r.Body["reachable"], string(r.Raw))
	require.Contains(t, r.Body, "table_count")
	require.NotContains(t, r.Body, "error")

	wrong := strings.Replace(tg.URL, tg.Password, "not-the-password", 1)
	require.NotEqual(t, tg.URL, wrong)
	bad, _ := createDatabase(t, b, map[string]any{"name": "bad", "url": wrong})
	r = b.Do("POST", "/v1/databases/"+bad+"/test", b.Owner(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, false, r.Body["reachable"], string(r.Raw))
	require.NotEmpty(t, r.Body["error"])
	require.NotContains(t, string(r.Raw), "not-the-password")
	require.NotContains(t, string(r.Raw), tg.Password)

	requireAPIError(t, b.Do("POST", "/v1/databases/"+uuid.NewString()+"/test", b.Owner(), nil), http.StatusNotFound, "not_found")
	requireAPIError(t, b.Do("POST", "/v1/databases/"+id+"/test", b.Member(), nil), http.StatusForbidden, "forbidden")
}

// TestDatabase_OutboxdsOwnIsRefused: an organization that registers
// outboxd's own database (a role of its server with a password, as an
// operator's colleague might hand out) reaches none of it: every
// connection is refused once it lands there.
func TestDatabase_OutboxdsOwnIsRefused(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	ctx := context.Background()
	role, password := "reader_"+strings.ReplaceAll(uuid.NewString()[:8], "-", ""), "pw-"+uuid.NewString()
	_, err := b.Pool.Exec(ctx, fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD '%s'`, role, password))
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = b.Pool.Exec(context.Background(), "DROP ROLE "+role) })

	id, _ := createDatabase(t, b, map[string]any{"name": "outboxd", "url": pgtest.PasswordURL(b.DBURL, role, password)})
	r := b.Do("POST", "/v1/databases/"+id+"/test", b.Admin(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, false, r.Body["reachable"], string(r.Raw))
	require.Contains(t, r.Body["error"], "outboxd's own database")
	require.NotContains(t, string(r.Raw), password)
}

// TestDatabase_TestConnectsAnew: testing a database ran list_tables on a
// connection the pool kept from an earlier call or test, so a password
// changed on the server since was reported reachable; each test now
// opens a new connection, as a query does.
func TestDatabase_TestConnectsAnew(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	tg := databasetest.NewTarget(t)
	role, roleURL := tg.NewRole(t, "")
	id, _ := createDatabase(t, b, map[string]any{"name": "shop", "url": roleURL})
	r := b.Do("POST", "/v1/databases/"+id+"/test", b.Admin(), nil)
	require.Equal(t, true, r.Body["reachable"], string(r.Raw))

	_, err := b.Pool.Exec(context.Background(), "ALTER ROLE "+role+" PASSWORD 'changed-on-the-server'")
	require.NoError(t, err)
	r = b.Do("POST", "/v1/databases/"+id+"/test", b.Admin(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, false, r.Body["reachable"], string(r.Raw))
	require.Equal(t, "connection_refused", r.Body["code"], string(r.Raw))
}

// TestDatabase_PrivilegedRoleIsRefused: a URL whose role is a superuser,
// can become one (SET ROLE) or is a member of pg_execute_server_program
// (whose queries run programs on the database server) is refused at
// registration and at a change of URL, storing nothing; a role made a
// superuser after registration is refused when the database is tested
// (as at every call).
func TestDatabase_PrivilegedRoleIsRefused(t *testing.T) {
	t.Parallel()
	b := apptest.Start(t, nil)
	tg := databasetest.NewTarget(t)
	boss, _ := tg.NewRole(t, "SUPERUSER")
	_, superURL := tg.NewRole(t, "SUPERUSER")
	_, programURL := tg.NewRole(t, "", "pg_execute_server_program")
	_, climberURL := tg.NewRole(t, "", boss)

	for _, u := range []string{superURL, programURL, climberURL} {
		e := requireAPIError(t, b.Do("POST", "/v1/databases", b.Owner(), map[string]any{"name": "shop", "url": u}), http.StatusBadRequest, "privileged_role")
		require.Contains(t, e["message"], "register a role with read grants only")
		require.Equal(t, "url", e["details"].(map[string]any)["fields"].([]any)[0].(map[string]any)["field"])
	}
	require.Empty(t, b.Do("GET", "/v1/databases", b.Owner(), nil).Body["databases"])

	role, roleURL := tg.NewRole(t, "")
	id, _ := createDatabase(t, b, map[string]any{"name": "shop", "url": roleURL})
	requireAPIError(t, b.Do("PATCH", "/v1/databases/"+id, b.Owner(), map[string]any{"url": programURL}), http.StatusBadRequest, "privileged_role")
	r := b.Do("POST", "/v1/databases/"+id+"/test", b.Admin(), nil)
	require.Equal(t, true, r.Body["reachable"], "the refused URL replaced the stored one: %s", r.Raw)

	_, err := b.Pool.Exec(context.Background(), "ALTER ROLE "+role+" SUPERUSER")
	require.NoError(t, err)
	r = b.Do("POST", "/v1/databases/"+id+"/test", b.Admin(), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Raw))
	require.Equal(t, false, r.Body["reachable"], string(r.Raw))
	require.Equal(t, "privileged_role", r.Body["code"], string(r.Raw))
	require.Contains(t, r.Body["error"], "is a superuser")
}
