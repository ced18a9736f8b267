package database_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors/database"
	"github.com/outboxd/outboxd/executors/database/databasetest"
)

// adminExec runs sql as the target's superuser.
func adminExec(t *testing.T, tg *databasetest.Target, sql string) error {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, tg.AdminURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// libpqConnString is a dblink connection string for the database and
// role of rawURL.
func libpqConnString(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	pw, _ := u.User.Password()
	return fmt.Sprintf("host=%s port=%s dbname=%s user=%s password=%s", u.Hostname(), u.Port(), u.Path[1:], u.User.Username(), pw)
}

// requireConnectsRefused: calls and the registration's check refuse the
// role of rawURL with privileged_role, the message naming found.
func requireConnectsRefused(t *testing.T, rawURL, found string) {
	t.Helper()
	c := newClient(t, nil)
	src := c.Source(database.Database{ID: uuid.New(), Name: "shop"})
	for _, action := range []string{database.ActionQuery, database.ActionListTables} {
		params := map[string]any{}
		if action == database.ActionQuery {
			params["sql"] = `SELECT 1`
		}
		_, e := exec(t, src, rawURL, action, params)
		require.NotNil(t, e, action)
		require.Equal(t, database.CodePrivilegedRole, e.Code, e.Message)
		require.False(t, e.Retryable)
		require.Contains(t, e.Message, found)
		require.Contains(t, e.Message, "register a role with read grants only")
	}
	var privileged *database.PrivilegedRoleError
	require.True(t, errors.As(c.CheckRole(context.Background(), rawURL), &privileged))
	require.Contains(t, privileged.Error(), found)
}

// TestDblink_CannotWriteThroughTheSource: dblink_exec opens a connection
// of its own from the database server, outside the call's read-only
// transaction, and wrote to the same database through a registered
// source. A role that may execute dblink's functions (every role once the
// extension is created: they are PUBLIC's) is refused; revoking them
// from PUBLIC lets the role be registered.
func TestDblink_CannotWriteThroughTheSource(t *testing.T) {
	tg := databasetest.NewTarget(t)
	if err := adminExec(t, tg, `CREATE EXTENSION dblink`); err != nil {
		t.Skipf("SKIPPED: the dblink extension cannot be created on the test server (install PostgreSQL's contrib, e.g. postgresql-contrib-15): %v", err)
	}
	before := tg.ItemCount(t)
	src := newClient(t, nil).Source(database.Database{ID: uuid.New(), Name: "shop"})
	res, e := query(t, src, tg.URL, `SELECT dblink_exec($1, 'INSERT INTO shop.items (name) VALUES (''through dblink'')')`, libpqConnString(t, tg.URL))
	require.Nil(t, res, "dblink wrote: %+v", res)
	require.NotNil(t, e)
	require.Equal(t, database.CodePrivilegedRole, e.Code, e.Message)
	require.Equal(t, before, tg.ItemCount(t), "nothing was written")
	requireConnectsRefused(t, tg.URL, "can execute dblink(text), a function of dblink")

	require.NoError(t, adminExec(t, tg, `REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA public FROM PUBLIC`))
	res, e = query(t, src, tg.URL, `SELECT count(*) FROM shop.items`)
	require.Nil(t, e)
	require.Equal(t, fmt.Sprint(before), string(res.Rows[0][0]))
}

// TestDblink_UnderAnotherNameIsRefused: the rule is the library a
// function runs, not its name or schema: dblink_exec's C function
// created as tools.run is refused as well, for a role that could SET ROLE
// to one allowed to execute it.
func TestDblink_UnderAnotherNameIsRefused(t *testing.T) {
	tg := databasetest.NewTarget(t)
	holder, _ := tg.NewRole(t, "")
	_, roleURL := tg.NewRole(t, "NOINHERIT", holder)
	err := adminExec(t, tg, `CREATE SCHEMA tools;
		CREATE FUNCTION tools.run(text, text) RETURNS text LANGUAGE c STRICT AS '$libdir/dblink', 'dblink_exec';
		REVOKE EXECUTE ON FUNCTION tools.run(text, text) FROM PUBLIC;
		GRANT EXECUTE ON FUNCTION tools.run(text, text) TO `+holder)
	if err != nil {
		t.Skipf("SKIPPED: dblink's library is not installed on the test server (install PostgreSQL's contrib, e.g. postgresql-contrib-15): %v", err)
	}
	t.Cleanup(func() { _ = adminExec(t, tg, `DROP SCHEMA tools CASCADE`) })
	requireConnectsRefused(t, roleURL, "can execute tools.run(text,text), a function of dblink")
}

// TestForeignServers_AreRefused: a role that may use a foreign-data
// wrapper or a foreign server, or read a foreign table, reaches other
// servers from the database server (postgres_fdw), outside outboxd's
// private network guard, with the credentials of a user mapping. It is
// refused, also when it has the privilege through a role it can only SET
// ROLE to. None of it needs an extension: a wrapper without a handler.
func TestForeignServers_AreRefused(t *testing.T) {
	tg := databasetest.NewTarget(t)
	require.NoError(t, adminExec(t, tg, `CREATE FOREIGN DATA WRAPPER remote_fdw;
		CREATE SERVER remote FOREIGN DATA WRAPPER remote_fdw;
		CREATE FOREIGN TABLE shop.remote_items (id integer) SERVER remote`))
	t.Cleanup(func() { _ = adminExec(t, tg, `DROP FOREIGN DATA WRAPPER remote_fdw CASCADE`) })
	for _, r := range []struct{ name, grant, found string }{
		{"wrapper", `GRANT USAGE ON FOREIGN DATA WRAPPER remote_fdw TO %s`, `can use the foreign-data wrapper "remote_fdw"`},
		{"server", `GRANT USAGE ON FOREIGN SERVER remote TO %s`, `can use the foreign server "remote"`},
		{"foreign table", `GRANT SELECT (id) ON shop.remote_items TO %s`, `can read the foreign table shop.remote_items`},
	} {
		t.Run(r.name, func(t *testing.T) {
			holder, holderURL := tg.NewRole(t, "")
			_, climberURL := tg.NewRole(t, "NOINHERIT", holder)
			requireConnectsRefusedNot(t, holderURL)
			require.NoError(t, adminExec(t, tg, fmt.Sprintf(r.grant, holder)))
			t.Cleanup(func() { _ = adminExec(t, tg, `DROP OWNED BY `+holder) })
			requireConnectsRefused(t, holderURL, r.found)
			requireConnectsRefused(t, climberURL, r.found)
		})
	}
}

// requireConnectsRefusedNot: the role of rawURL is accepted.
func requireConnectsRefusedNot(t *testing.T, rawURL string) {
	t.Helper()
	c := newClient(t, nil)
	require.NoError(t, c.CheckRole(context.Background(), rawURL))
	_, e := exec(t, c.Source(database.Database{ID: uuid.New(), Name: "shop"}), rawURL, database.ActionListTables, map[string]any{})
	require.Nil(t, e)
}

// TestRoleCheck_ThatCannotRunRefusesTheConnection: a database where the
// check cannot read what it needs (here the foreign servers, revoked from
// PUBLIC) is not used: every call fails, saying why, and is not retried.
func TestRoleCheck_ThatCannotRunRefusesTheConnection(t *testing.T) {
	tg := databasetest.NewTarget(t)
	require.NoError(t, adminExec(t, tg, `REVOKE SELECT ON pg_catalog.pg_foreign_server FROM PUBLIC`))
	src := newClient(t, nil).Source(database.Database{ID: uuid.New(), Name: "shop"})
	for action, params := range map[string]map[string]any{database.ActionQuery: {"sql": `SELECT 1`}, database.ActionListTables: {}} {
		_, e := exec(t, src, tg.URL, action, params)
		require.NotNil(t, e, action)
		require.False(t, e.Retryable, e.Message)
		require.Contains(t, e.Message, "outboxd could not check what the URL's role may do")
		require.Contains(t, e.Message, "pg_foreign_server")
	}
}
