package database

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// PrivilegedRoleError is the refusal of a connection whose role may do
// more than read, even in a read-only transaction:
//   - a superuser, a role that can become one (SET ROLE), or a member of
//     pg_execute_server_program, pg_write_server_files or
//     pg_read_server_files, which runs programs on the database server
//     (COPY ... TO PROGRAM) or reads and writes its files (pg_read_file,
//     COPY ... TO '/path', lo_export);
//   - a role that can open connections from the database server: execute
//     a function of dblink (or of another library of connectingLibraries),
//     whose connections are sessions of their own that the read-only
//     transaction does not hold (dblink_exec writes to any database the
//     server reaches, this one too), or use a foreign-data wrapper or a
//     foreign server, or read a foreign table (postgres_fdw), which reach
//     other servers with a user mapping's credentials. Either reaches
//     addresses outboxd's private network guard never sees.
type PrivilegedRoleError struct {
	// Found says what was found: "is a superuser", "can become the
	// superuser role \"admin\" (SET ROLE)", "is a member of
	// pg_execute_server_program", "can execute dblink(text), a function of
	// dblink",
	// "can use the foreign server \"remote\"".
	Found string

	// files and connects say which of the two kinds was found.
	files, connects bool
}

func (e *PrivilegedRoleError) Error() string {
	var why []string
	if e.files || !e.connects {
		why = append(why, "run programs on the database server or read and write its files")
	}
	if e.connects {
		why = append(why, "open connections from the database server (which write outside the read-only transaction)")
	}
	return "the database URL's role " + e.Found + ", which lets an agent's query " + strings.Join(why, " and ") + ": register a role with read grants only"
}

// connectingLibraries matches the shared library (pg_proc.probin) of C
// functions that open connections or sessions of their own from the
// database server: dblink (dblink_exec, dblink_connect, dblink ...),
// pg_background (runs a statement in a background worker, its own
// transaction), pgsql-http (http_post ...) and pgmemcache
// (memcache_server_add names any host and port, memcache_set writes
// there). The library, not the
// function's name or schema, says what a function does: dblink's
// functions created under other names are its too. Its one group is the
// library's name, for the error.
const connectingLibraries = `(?:^|/)(dblink|pg_background|http|pgmemcache)(?:[.][A-Za-z]+)?$`

// privilegedRoles is the query of refusePrivileged. Every name is
// pg_catalog's and every comparison is pg_catalog's operator, so that a
// search_path the role set for itself (ALTER ROLE ... SET) cannot lead to
// functions or operators of its own. Membership is checked of the session
// user: the role a role setting switches to at login, and every role an
// agent's SET ROLE could, is one it is a member of (mine), and each
// privilege is checked of all of them (PUBLIC's grants count for each).
// Functions and foreign tables are looked for from OID 16384 on
// (FirstNormalObjectId, where the OID counter also restarts when it
// wraps): below it are only what initdb created, none of them a foreign
// table or a function of those libraries, and reading pg_proc's few
// thousand built-ins at every call would cost more than the rest of the
// check.
const privilegedRoles = `WITH mine AS (
	SELECT r.oid FROM pg_catalog.pg_roles r WHERE pg_catalog.pg_has_role(session_user, r.oid, 'MEMBER')
)
SELECT
	(SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname OPERATOR(pg_catalog.=) session_user),
	(SELECT r.rolname FROM pg_catalog.pg_roles r WHERE r.rolsuper AND pg_catalog.pg_has_role(session_user, r.oid, 'MEMBER') LIMIT 1),
	pg_catalog.pg_has_role(session_user, 'pg_execute_server_program', 'MEMBER'),
	pg_catalog.pg_has_role(session_user, 'pg_write_server_files', 'MEMBER'),
	pg_catalog.pg_has_role(session_user, 'pg_read_server_files', 'MEMBER'),
	(SELECT p.oid::pg_catalog.regprocedure::pg_catalog.text OPERATOR(pg_catalog.||) ', a function of ' OPERATOR(pg_catalog.||) pg_catalog.substring(p.probin, '` + connectingLibraries + `')
		FROM pg_catalog.pg_proc p
		WHERE p.oid OPERATOR(pg_catalog.>=) 16384 AND p.probin OPERATOR(pg_catalog.~) '` + connectingLibraries + `'
		  AND EXISTS (SELECT FROM mine WHERE pg_catalog.has_function_privilege(mine.oid, p.oid, 'EXECUTE'))
		ORDER BY 1 LIMIT 1),
	(SELECT w.fdwname::pg_catalog.text FROM pg_catalog.pg_foreign_data_wrapper w
		WHERE EXISTS (SELECT FROM mine WHERE pg_catalog.has_foreign_data_wrapper_privilege(mine.oid, w.oid, 'USAGE'))
		ORDER BY 1 LIMIT 1),
	(SELECT s.srvname::pg_catalog.text FROM pg_catalog.pg_foreign_server s
		WHERE EXISTS (SELECT FROM mine WHERE pg_catalog.has_server_privilege(mine.oid, s.oid, 'USAGE'))
		ORDER BY 1 LIMIT 1),
	(SELECT c.oid::pg_catalog.regclass::pg_catalog.text FROM pg_catalog.pg_class c
		WHERE c.oid OPERATOR(pg_catalog.>=) 16384 AND c.relkind OPERATOR(pg_catalog.=) 'f'
		  AND EXISTS (SELECT FROM mine WHERE pg_catalog.has_any_column_privilege(mine.oid, c.oid, 'SELECT'))
		ORDER BY 1 LIMIT 1)`

// refusePrivileged refuses a connection whose role is privileged (see
// PrivilegedRoleError). It runs each time a call takes a connection
// (checkRole), so a role given such a privilege after its database was
// registered is refused at the next call. A failure of the check (a
// statement_timeout the role set for itself, a catalog it may not read)
// refuses the connection too.
func refusePrivileged(ctx context.Context, conn *pgx.Conn) error {
	if conn.PgConn().ParameterStatus("is_superuser") == "on" {
		return &PrivilegedRoleError{Found: "is a superuser", files: true}
	}
	var (
		super                          *bool
		superRole, fn, fdw, srv, table *string
		exec, wr, read                 bool
	)
	// One round trip, and no statement left prepared in the session.
	err := conn.QueryRow(ctx, privilegedRoles, pgx.QueryExecModeExec).Scan(&super, &superRole, &exec, &wr, &read, &fn, &fdw, &srv, &table)
	if err != nil {
		return &roleCheckError{err: err}
	}
	e := &PrivilegedRoleError{}
	var found []string
	switch {
	case super != nil && *super:
		found = append(found, "is a superuser")
	case superRole != nil:
		found = append(found, fmt.Sprintf("can become the superuser role %q (SET ROLE)", *superRole))
	}
	for _, m := range []struct {
		member bool
		role   string
	}{{exec, "pg_execute_server_program"}, {wr, "pg_write_server_files"}, {read, "pg_read_server_files"}} {
		if m.member {
			found = append(found, "is a member of "+m.role)
		}
	}
	e.files = len(found) > 0
	for _, c := range []struct {
		name   *string
		format string
	}{{fn, "can execute %s"}, {fdw, "can use the foreign-data wrapper %q"}, {srv, "can use the foreign server %q"}, {table, "can read the foreign table %s"}} {
		if c.name != nil {
			found = append(found, fmt.Sprintf(c.format, *c.name))
			e.connects = true
		}
	}
	if len(found) == 0 {
		return nil
	}
	e.Found = strings.Join(found, " and ")
	return e
}

// roleCheckError is a failure of refusePrivileged's query: the
// connection is not used, as what its role may do is not known.
type roleCheckError struct{ err error }

func (e *roleCheckError) Error() string { return e.err.Error() }

// refuseOwnDatabase is a pool's AfterConnect hook: a new connection is
// refused when it reached own (unless own is zero). What a connection
// reached does not change; what its role may do does, so the role is
// checked at every acquire instead (checkRole).
func refuseOwnDatabase(own Identity) func(context.Context, *pgx.Conn) error {
	if own == (Identity{}) {
		return nil
	}
	return refuseOwn(own)
}

// checkRole is a pool's PrepareConn hook, run each time a call takes a
// connection, new or pooled: a role given a privilege (ALTER ROLE ...
// SUPERUSER, GRANT pg_execute_server_program) after the connection was
// opened is refused at the next call, not when the connection happens to
// be replaced. A refused connection, or one whose check failed, is
// closed and fails the call rather than being retried on another.
func checkRole(ctx context.Context, conn *pgx.Conn) (bool, error) {
	if err := refusePrivileged(ctx, conn); err != nil {
		return false, err
	}
	return true, nil
}

// CheckRole connects to the database of rawURL once, as a call would,
// and returns a *PrivilegedRoleError when its role is privileged; nil
// otherwise, also when the URL is refused or the database cannot be
// reached or checked now (a call says why). It is the check at
// registration; every call's connection is checked again.
func (c *Client) CheckRole(ctx context.Context, rawURL string) error {
	pc, err := poolConfig(rawURL, &c.cfg)
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, pc.ConnConfig)
	if err != nil {
		return nil
	}
	defer conn.Close(ctx)
	if err, ok := refusePrivileged(ctx, conn).(*PrivilegedRoleError); ok {
		return err
	}
	return nil
}
