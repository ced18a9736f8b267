package database

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// PrivilegedRoleError is the refusal of a connection whose role may do
// more than read: a superuser, a role that can become one (SET ROLE), or
// a member of pg_execute_server_program, pg_write_server_files or
// pg_read_server_files. Such a role runs programs on the database server
// (COPY ... TO PROGRAM) or reads and writes its files (pg_read_file,
// COPY ... TO '/path', lo_export) even in a read-only transaction.
type PrivilegedRoleError struct {
	// Found says what was found: "is a superuser", "can become the
	// superuser role \"admin\" (SET ROLE)", "is a member of
	// pg_execute_server_program".
	Found string
}

func (e *PrivilegedRoleError) Error() string {
	return "the database URL's role " + e.Found + ", which lets an agent's query run programs on the database server or read and write its files: register a role with read grants only"
}

// privilegedRoles is the query of refusePrivileged. Every name is
// pg_catalog's and its one comparison is pg_catalog's operator, so that
// a search_path the role set for itself (ALTER ROLE ... SET) cannot lead
// to functions or operators of its own. Membership is checked of the
// session user: the role a role setting switches to at login, and every
// role an agent's SET ROLE could, is one it is a member of.
const privilegedRoles = `SELECT
	(SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname OPERATOR(pg_catalog.=) session_user),
	(SELECT r.rolname FROM pg_catalog.pg_roles r WHERE r.rolsuper AND pg_catalog.pg_has_role(session_user, r.oid, 'MEMBER') LIMIT 1),
	pg_catalog.pg_has_role(session_user, 'pg_execute_server_program', 'MEMBER'),
	pg_catalog.pg_has_role(session_user, 'pg_write_server_files', 'MEMBER'),
	pg_catalog.pg_has_role(session_user, 'pg_read_server_files', 'MEMBER')`

// refusePrivileged refuses a connection whose role is privileged (see
// PrivilegedRoleError). It runs each time a call takes a connection
// (checkRole), so a role given such a privilege after its database was
// registered is refused at the next call. A failure of the check (a statement_timeout the role set
// for itself, say) refuses the connection too.
func refusePrivileged(ctx context.Context, conn *pgx.Conn) error {
	if conn.PgConn().ParameterStatus("is_superuser") == "on" {
		return &PrivilegedRoleError{Found: "is a superuser"}
	}
	var (
		super          *bool
		superRole      *string
		exec, wr, read bool
	)
	// One round trip, and no statement left prepared in the session.
	if err := conn.QueryRow(ctx, privilegedRoles, pgx.QueryExecModeExec).Scan(&super, &superRole, &exec, &wr, &read); err != nil {
		return err
	}
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
	if len(found) == 0 {
		return nil
	}
	return &PrivilegedRoleError{Found: strings.Join(found, " and ")}
}

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
