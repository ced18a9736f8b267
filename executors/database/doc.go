// Package database is the database archetype of the action source seam:
// Postgres databases an organization registers (source id
// "database:<uuid>") that agents may read through three actions, query
// (R1), list_tables and describe_table (R0).
//
// Everything runs in a READ ONLY transaction whose first statement sets a
// local statement_timeout and takes the transaction's snapshot, so the
// transaction can no longer be switched to read-write; the agent's SQL is
// sent with the extended protocol, which takes exactly one statement. A
// result stops at the database's max_rows and at a byte budget, and says it
// was truncated.
//
// The connection URL is a secret: it is passed per call
// (ExecContext.Token, resolved from the credential store) and never kept
// in this package's types apart from the pool it opened. Each database has
// a small pool per process (Config.MaxConns), opened on first use and
// closed after Config.IdleTimeout without calls, when the database is
// dropped, and on Close. A query's connection is closed after its call,
// so that nothing of its session reaches another call; list_tables and
// describe_table, which run only outboxd's statements, and previews,
// which only plan the agent's (EXPLAIN), reuse theirs. Unless Config.AllowPrivateNetworks is set, the
// pool dials through the private network guard (internal/platform/netguard), which
// checks the address every connection actually reaches. Every new
// connection is refused when it reached outboxd's own database (own.go),
// and every call's connection, new or pooled, when its role may do more
// than read: a superuser, a role that can become one, or a member of
// pg_execute_server_program, pg_write_server_files or
// pg_read_server_files, whose queries would run programs on the server
// or reach its files even in a read-only transaction, or a role that can
// open connections from the server: execute a function of dblink (whose
// dblink_exec writes outside the read-only transaction), pg_background,
// pgsql-http or pgmemcache, use a foreign-data wrapper or server, or read a foreign
// table (privileged.go).
//
// The registered databases themselves (their CRUD and their registration
// with the catalog) are package databases; their rows are stored by
// databasestore.
package database
