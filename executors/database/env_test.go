package database_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors/database"
	"github.com/outboxd/outboxd/executors/database/databasetest"
)

// TestQuery_NothingFromOutboxdsEnvironment: the Postgres driver fills
// what a URL leaves out from the PG* environment variables, a service
// file and files of the home directory. None of outboxd's own reaches a
// registered database: not a weaker sslmode, another host, user or
// password from a service, session options, nor settings that break
// every connection (an unreadable root certificate, a standby-only
// target). Each variable is set alone to a value that would change the
// connection, and the call must see the same session as without it.
func TestQuery_NothingFromOutboxdsEnvironment(t *testing.T) {
	tg := databasetest.NewTarget(t)
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
		return path
	}
	// The URL names no sslmode (the test server has no TLS: the default,
	// prefer, falls back to none), so that PGSSLMODE could weigh.
	u, err := url.Parse(tg.URL)
	require.NoError(t, err)
	u.RawQuery = ""
	target := u.String()
	role := u.User.Username()
	// A service that leads elsewhere, as another role, without TLS, with
	// a session that may write.
	serviceFile := write("services.conf", "[hostile]\nhost=192.0.2.1\nport=1\nuser=postgres\npassword=wrong\ndbname=postgres\n"+
		"sslmode=disable\noptions=-c default_transaction_read_only=off\ntarget_session_attrs=standby\napplication_name=hostile\n")
	garbage := write("garbage.pem", "not a certificate\n")
	home := filepath.Join(dir, "home")
	write("home/.pg_service.conf", "[hostile]\nhost=192.0.2.1\nport=1\n")
	write("home/.pgpass", "*:*:*:*:"+tg.Password+"\n")
	write("home/.postgresql/root.crt", "not a certificate\n")
	write("home/.postgresql/postgresql.crt", "not a certificate\n")
	write("home/.postgresql/postgresql.key", "not a key\n")

	env := map[string]string{
		"PGHOST":               "192.0.2.1",
		"PGPORT":               "1,2",
		"PGDATABASE":           "postgres",
		"PGUSER":               "postgres",
		"PGPASSWORD":           "wrong",
		"PGPASSFILE":           garbage,
		"PGAPPNAME":            "hostile",
		"PGCONNECT_TIMEOUT":    "not-a-number",
		"PGSSLMODE":            "verify-full", // the test server has no TLS
		"PGSSLKEY":             garbage,
		"PGSSLCERT":            garbage,
		"PGSSLCERTMODE":        "require",
		"PGSSLSNI":             "maybe",
		"PGSSLROOTCERT":        garbage,
		"PGSSLPASSWORD":        "hostile",
		"PGSSLNEGOTIATION":     "direct",
		"PGTARGETSESSIONATTRS": "standby",
		"PGSERVICEFILE":        serviceFile,
		"PGSERVICE":            "hostile",
		"PGTZ":                 "Pacific/Kiritimati",
		"PGOPTIONS":            "-c default_transaction_read_only=off",
		"PGMINPROTOCOLVERSION": "3.2", // Postgres 15 speaks 3.0
		"PGMAXPROTOCOLVERSION": "nine",
		"PGCHANNELBINDING":     "require",
		"PGREQUIREAUTH":        "gss",
		"HOME":                 home,
	}
	for name := range env {
		if _, ok := os.LookupEnv(name); ok && name != "HOME" {
			t.Setenv(name, "")
			require.NoError(t, os.Unsetenv(name))
		}
	}

	const session = `SELECT current_user, current_database(), current_setting('application_name'),
		current_setting('default_transaction_read_only'), current_setting('TimeZone'),
		(SELECT ssl FROM pg_catalog.pg_stat_ssl WHERE pid = pg_backend_pid())`
	newSource := func() *database.Client { return newClient(t, nil) }
	res, e := query(t, newSource().Source(database.Database{ID: uuid.New(), Name: "shop"}), target, session)
	require.Nil(t, e)
	want := mustJSON(t, res.Rows[0])
	require.Contains(t, want, `"`+role+`"`)
	require.Contains(t, want, `"outboxd","on"`)

	noPassword := *u
	noPassword.User = url.User(role)
	for name, value := range env {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, value)
			switch name {
			case "PGSERVICEFILE": // read only for a service
				t.Setenv("PGSERVICE", "hostile")
			case "PGSERVICE": // a service that exists, in ~/.pg_service.conf
				t.Setenv("HOME", home)
			}
			c := newSource()
			res, e := query(t, c.Source(database.Database{ID: uuid.New(), Name: "shop"}), target, session)
			require.Nil(t, e, "%s=%s: %v", name, value, e)
			require.Equal(t, want, mustJSON(t, res.Rows[0]))

			// A URL without a password gets none from outboxd's host
			// (PGPASSWORD, ~/.pgpass), even the right one.
			t.Setenv("PGPASSWORD", tg.Password)
			_, e = query(t, c.Source(database.Database{ID: uuid.New(), Name: "shop"}), noPassword.String(), `SELECT 1`)
			require.NotNil(t, e)
			require.Equal(t, database.CodeConnectionRefused, e.Code, e.Message)
		})
	}

	// The one thing the driver takes whatever the connection string
	// says: a service PGSERVICE names must exist (outboxd's own database
	// could not be reached either). The error says so.
	t.Setenv("PGSERVICE", "absent")
	_, e = query(t, newSource().Source(database.Database{ID: uuid.New(), Name: "shop"}), target, session)
	require.NotNil(t, e)
	require.Equal(t, database.CodeInvalidURL, e.Code)
	require.Contains(t, e.Message, "PGSERVICE")
}

// TestQuery_URLPartsReachTheDriverAsWritten: the user, password and
// database of a URL reach the server as they are, whatever characters
// they hold (spaces, +, &, =, %, @, /, quotes).
func TestQuery_URLPartsReachTheDriverAsWritten(t *testing.T) {
	tg := databasetest.NewTarget(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, tg.AdminURL)
	require.NoError(t, err)
	user, password := "odd user+&=%@/'\"x"+uuid.NewString()[:8], `p w+&=%2B@/?#'"\x`
	_, err = admin.Exec(ctx, fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD '%s'`, pgx.Identifier{user}.Sanitize(), strings.ReplaceAll(password, "'", "''")))
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := admin.Exec(ctx, fmt.Sprintf(`DROP ROLE %s`, pgx.Identifier{user}.Sanitize()))
		require.NoError(t, err)
		require.NoError(t, admin.Close(ctx))
	})

	u, err := url.Parse(tg.URL)
	require.NoError(t, err)
	u.User = url.UserPassword(user, password)
	src := newClient(t, nil).Source(database.Database{ID: uuid.New(), Name: "shop"})
	res, e := query(t, src, u.String(), `SELECT current_user`)
	require.Nil(t, e)
	var got string
	require.NoError(t, json.Unmarshal(res.Rows[0][0], &got))
	require.Equal(t, user, got)

	u.User = url.UserPassword(user, password+"+")
	_, e = query(t, newClient(t, nil).Source(database.Database{ID: uuid.New(), Name: "shop"}), u.String(), `SELECT current_user`)
	require.NotNil(t, e)
	require.Equal(t, database.CodeConnectionRefused, e.Code, e.Message)
}
