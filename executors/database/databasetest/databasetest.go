// Package databasetest gives tests a Postgres database to register as a
// database source: real data, and a role that may write, so that a test
// can show the read-only transaction is what refuses a write.
package databasetest

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/platform/pglaunch"
	"github.com/outboxd/outboxd/internal/platform/pgtest"
)

// Target is a second Postgres database for a test (a copy of the test
// server's migrated template, on the same server): a table shop.items of
// three rows, a view shop.cheap, a table public.big of 20,000 rows, a
// function shop.write_item that writes, and a role that owns none of it
// but may write to shop.items (and call shop.write_item), so that only the
// read-only transaction stands between a query and a write.
type Target struct {
	// AdminURL is the superuser's URL of the database.
	AdminURL string
	// URL is the writing role's URL, with a password (over TCP: see
	// pgtest.PasswordURL).
	URL string
	// Password is in URL.
	Password string

	passwordURL func(role, password string) string
}

// NewTarget creates a Target, dropped with its role when t ends.
func NewTarget(t testing.TB) *Target {
	t.Helper()
	adminURL := pgtest.URL(t)
	return newTarget(t, adminURL, func(role, password string) string {
		return pgtest.PasswordURL(adminURL, role, password)
	})
}

// NewServerTarget creates a Target on a Postgres server of the test's
// own, started with settings (postgresql.conf parameters, such as
// max_prepared_transactions, that only a restart applies), and removed
// when t ends.
func NewServerTarget(t testing.TB, settings map[string]string) *Target {
	t.Helper()
	ctx := context.Background()
	dataDir := filepath.Join(t.TempDir(), "pg")
	srv, err := pglaunch.Start(ctx, &pglaunch.Config{DataDir: dataDir, TCP: true, Fast: true})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = srv.Stop(context.Background())
		_ = srv.RemoveData()
	})
	conn, err := pgx.Connect(ctx, srv.URL("postgres"))
	require.NoError(t, err)
	for name, value := range settings {
		_, err = conn.Exec(ctx, fmt.Sprintf(`ALTER SYSTEM SET %s = %s`, pgx.Identifier{name}.Sanitize(), quoteLiteral(value)))
		require.NoError(t, err, name)
	}
	require.NoError(t, conn.Close(ctx))
	require.NoError(t, srv.Stop(ctx))
	restarted, err := pglaunch.Start(ctx, &pglaunch.Config{DataDir: dataDir, Port: srv.Port(), TCP: true, Fast: true})
	require.NoError(t, err)
	srv = restarted
	require.NoError(t, srv.CreateDatabase(ctx, "target"))
	return newTarget(t, srv.URL("target"), func(role, password string) string {
		return srv.TCPURL("target", url.UserPassword(role, password))
	})
}

// quoteLiteral quotes s as a SQL string literal.
func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// newTarget fills the database of adminURL (a superuser's) and creates
// the writing role, whose URL passwordURL returns.
func newTarget(t testing.TB, adminURL string, passwordURL func(role, password string) string) *Target {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, adminURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	suffix := strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	role, password := "writer_"+suffix, "pw-"+suffix+"-secret"
	_, err = conn.Exec(ctx, fmt.Sprintf(`
		CREATE ROLE %[1]s LOGIN PASSWORD '%[2]s';
		CREATE SCHEMA shop;
		CREATE TABLE shop.items (id serial PRIMARY KEY, name text NOT NULL, note text DEFAULT 'none', price numeric(10,2));
		INSERT INTO shop.items (name, price) VALUES ('apple', 1.50), ('pear', 2.25), ('plum', NULL);
		CREATE TABLE public.big (n integer, pad text);
		INSERT INTO public.big SELECT g, repeat('x', 100) FROM generate_series(1, 20000) g;
		CREATE VIEW shop.cheap AS SELECT id, name FROM shop.items WHERE price < 2;
		CREATE FUNCTION shop.write_item(n text) RETURNS integer LANGUAGE sql AS
			'INSERT INTO shop.items (name) VALUES (n) RETURNING id';
		GRANT USAGE ON SCHEMA shop TO %[1]s;
		GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON ALL TABLES IN SCHEMA shop TO %[1]s;
		GRANT USAGE ON ALL SEQUENCES IN SCHEMA shop TO %[1]s;
		GRANT SELECT ON public.big TO %[1]s;
		GRANT CREATE ON SCHEMA public TO %[1]s;
	`, role, password))
	require.NoError(t, err)
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, adminURL)
		if err != nil {
			t.Errorf("dropping role: %v", err)
			return
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, fmt.Sprintf(`DROP OWNED BY %[1]s; DROP ROLE %[1]s`, role))
		if err != nil {
			t.Errorf("dropping role: %v", err)
		}
	})
	return &Target{AdminURL: adminURL, URL: passwordURL(role, password), Password: password, passwordURL: passwordURL}
}

// NewRole creates a login role of the target's server with the given
// attributes (such as "SUPERUSER", or "" for none), made a member of each
// role of memberOf, and returns its name and URL; it is dropped when t
// ends.
func (tg *Target) NewRole(t testing.TB, attributes string, memberOf ...string) (role, roleURL string) {
	t.Helper()
	ctx := context.Background()
	suffix := strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
	role, password := "role_"+suffix, "pw-"+suffix+"-secret"
	conn, err := pgx.Connect(ctx, tg.AdminURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD '%s' %s`, role, password, attributes))
	require.NoError(t, err)
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, tg.AdminURL)
		if err != nil {
			t.Errorf("dropping role: %v", err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP ROLE `+role); err != nil {
			t.Errorf("dropping role: %v", err)
		}
	})
	for _, r := range memberOf {
		_, err = conn.Exec(ctx, fmt.Sprintf(`GRANT %s TO %s`, pgx.Identifier{r}.Sanitize(), role))
		require.NoError(t, err)
	}
	return role, tg.passwordURL(role, password)
}

// ItemCount counts shop.items as the superuser.
func (tg *Target) ItemCount(t testing.TB) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), tg.AdminURL)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var n int
	require.NoError(t, conn.QueryRow(context.Background(), `SELECT count(*) FROM shop.items`).Scan(&n))
	return n
}
