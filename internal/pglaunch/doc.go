// Package pglaunch starts a private PostgreSQL server from locally installed
// binaries, so that `outboxd dev` and the test suite need no manual database
// set-up.
//
// Start initializes a cluster with initdb when the data directory is new,
// then runs the postgres server process directly as a child. The server
// listens only on 127.0.0.1 (on a free port unless one is configured), has no
// Unix-domain socket, and trusts local connections as the superuser
// "postgres". Its log goes to a file in the data directory rather than to the
// parent's terminal.
//
// The server runs in its own process group so that a Ctrl-C in a terminal
// reaches the application but not the database: the application drains its
// work and then calls Server.Stop, which asks for a fast shutdown and waits
// for it. On Linux the server is additionally told to shut down if the
// launching process dies without calling Stop.
//
// PostgreSQL refuses to run as root. When the caller is root, initdb and the
// server run as the "postgres" system user if there is one and as "nobody"
// otherwise, and the data directory is handed over to that user. If that user
// cannot reach the configured data directory (for example one under /root,
// which is usually mode 0700), the cluster lives instead in
// /var/tmp/outboxd-pg-<hash>/data, where <hash> is derived from the absolute
// configured path. The configured directory thus stays the logical name of the
// cluster: the same Config.DataDir finds the same data on every run, and
// Server.DataDir reports where the files actually are.
package pglaunch
