package database_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/database"
	"github.com/outboxd/outboxd/executors/database/databasetest"
)

// TestPrivilegedRole_IsRefused: a role that is a superuser, can become
// one (SET ROLE) or is a member of pg_execute_server_program or
// pg_read_server_files (directly or through another role) lets an
// agent's query run programs on the database server (COPY ... TO
// PROGRAM, which ran before) or read its files in a read-only
// transaction.
// Each is refused at every call, and by the registration's check; a
// role with read grants only is not.
func TestPrivilegedRole_IsRefused(t *testing.T) {
	tg := databasetest.NewTarget(t)
	ctx := context.Background()
	boss, _ := tg.NewRole(t, "SUPERUSER")
	readers, _ := tg.NewRole(t, "", "pg_read_server_files")
	_, superURL := tg.NewRole(t, "SUPERUSER")
	_, programURL := tg.NewRole(t, "", "pg_execute_server_program")
	_, climberURL := tg.NewRole(t, "", boss)
	_, readerURL := tg.NewRole(t, "", readers)

	c := newClient(t, nil)
	for _, r := range []struct{ name, url, sql, found string }{
		{"superuser", superURL, `COPY (SELECT 1) TO PROGRAM 'true'`, "is a superuser"},
		{"pg_execute_server_program", programURL, `COPY (SELECT 1) TO PROGRAM 'true'`, "is a member of pg_execute_server_program"},
		{"SET ROLE to a superuser", climberURL, `SET ROLE ` + boss, `can become the superuser role "` + boss + `" (SET ROLE)`},
		// Reading needs EXECUTE on pg_read_file too, granted apart.
		{"pg_read_server_files through another role", readerURL, `SELECT 1`, "is a member of pg_read_server_files"},
	} {
		t.Run(r.name, func(t *testing.T) {
			src := c.Source(database.Database{ID: uuid.New(), Name: "shop"})
			res, e := query(t, src, r.url, r.sql)
			require.Nil(t, res)
			require.NotNil(t, e)
			require.Equal(t, database.CodePrivilegedRole, e.Code, e.Message)
			require.False(t, e.Retryable)
			require.Contains(t, e.Message, r.found)
			require.Contains(t, e.Message, "register a role with read grants only")
			_, e = exec(t, src, r.url, database.ActionListTables, map[string]any{})
			require.NotNil(t, e)
			require.Equal(t, database.CodePrivilegedRole, e.Code, e.Message)

			var privileged *database.PrivilegedRoleError
			require.True(t, errors.As(c.CheckRole(ctx, r.url), &privileged))
			require.Contains(t, privileged.Error(), r.found)
		})
	}

	t.Run("read grants only", func(t *testing.T) {
		require.NoError(t, c.CheckRole(ctx, tg.URL))
		res, e := query(t, c.Source(database.Database{ID: uuid.New(), Name: "shop"}), tg.URL, `SELECT count(*) FROM shop.items`)
		require.Nil(t, e)
		require.Equal(t, "3", string(res.Rows[0][0]))
	})
}

// TestPrivilegedRole_MadeSoAfterRegistration: a role made a superuser
// after its database was registered (and called) is refused at the next
// call's connection.
func TestPrivilegedRole_MadeSoAfterRegistration(t *testing.T) {
	tg := databasetest.NewTarget(t)
	ctx := context.Background()
	role, roleURL := tg.NewRole(t, "")
	src := newClient(t, nil).Source(database.Database{ID: uuid.New(), Name: "shop"})
	_, e := query(t, src, roleURL, `SELECT 1`)
	require.Nil(t, e)

	admin, err := pgx.Connect(ctx, tg.AdminURL)
	require.NoError(t, err)
	defer admin.Close(ctx)
	_, err = admin.Exec(ctx, `ALTER ROLE `+role+` SUPERUSER`)
	require.NoError(t, err)
	_, e = query(t, src, roleURL, `COPY (SELECT 1) TO PROGRAM 'true'`)
	require.NotNil(t, e)
	require.Equal(t, database.CodePrivilegedRole, e.Code, e.Message)
	require.Contains(t, e.Message, "is a superuser")
}

// TestPrivilegedRole_MadeSoWhileItsConnectionsArePooled: list_tables,
// describe_table and previews reuse pooled connections; a role made a
// superuser, or given pg_execute_server_program, after those connections
// were opened is refused at the next call of each kind, on the
// connection it would reuse, and not retried.
func TestPrivilegedRole_MadeSoWhileItsConnectionsArePooled(t *testing.T) {
	for _, grant := range []struct{ name, sql, found string }{
		{"superuser", `ALTER ROLE %s SUPERUSER`, "is a superuser"},
		{"pg_execute_server_program", `GRANT pg_execute_server_program TO %s`, "is a member of pg_execute_server_program"},
	} {
		t.Run(grant.name, func(t *testing.T) {
			tg := databasetest.NewTarget(t)
			ctx := context.Background()
			role, roleURL := tg.NewRole(t, "")
			src := newClient(t, nil).Source(database.Database{ID: uuid.New(), Name: "shop"})
			pv := src.(executors.Previewer)
			run := func(action, params string) error {
				_, err := src.Execute(ctx, action, json.RawMessage(params), executors.ExecContext{Token: roleURL})
				return err
			}
			// In this order: query first, as its connection is closed
			// after it, so that the others leave one in the pool, which
			// each of them, and then query, would take again.
			calls := []struct {
				name string
				call func() error
			}{
				{"query", func() error { return run(database.ActionQuery, `{"sql":"SELECT 1"}`) }},
				{"list_tables", func() error { return run(database.ActionListTables, `{}`) }},
				{"describe_table", func() error { return run(database.ActionDescribeTable, `{"table":"big"}`) }},
				{"preview", func() error {
					_, err := pv.Preview(ctx, database.ActionQuery, json.RawMessage(`{"sql":"SELECT 1"}`), executors.ExecContext{Token: roleURL})
					return err
				}},
			}
			for _, c := range calls {
				require.NoError(t, c.call(), c.name)
			}

			admin, err := pgx.Connect(ctx, tg.AdminURL)
			require.NoError(t, err)
			defer admin.Close(ctx)
			_, err = admin.Exec(ctx, fmt.Sprintf(grant.sql, role))
			require.NoError(t, err)

			// Every kind is tried, each refusal checked apart.
			for _, c := range append(calls[1:], calls[0]) {
				var e *executors.Error
				err := c.call()
				if !errors.As(err, &e) || e.Code != database.CodePrivilegedRole || e.Retryable || !strings.Contains(e.Message, grant.found) {
					t.Errorf("%s: want privileged_role, not retried, naming %q; got %v", c.name, grant.found, err)
				}
			}
		})
	}
}
