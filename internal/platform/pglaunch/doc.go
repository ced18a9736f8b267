// Package pglaunch starts a private PostgreSQL server from locally installed
// binaries, so that `outboxd dev` and the test suite need no manual database
// set-up.
//
// Start initializes a cluster with initdb when the data directory is new,
// then runs the postgres server process directly as a child. Its log goes to
// a file in the data directory rather than to the parent's terminal.
//
// Only the user running the server can connect to it. The server listens on
// a Unix socket alone, in /tmp/outboxd-sock-<hash> (<hash> derived from the
// data directory, so a restarted server has the same URL; short, because a
// socket's path is limited to 107 bytes), a directory of mode 0700 owned by
// the server's user, and no TCP port. pg_hba.conf, rewritten at every start,
// lets the superuser "postgres" in through that socket without a password:
// whoever can enter the directory can read the data directory anyway. Other
// local users cannot reach the socket. Config.TCP adds a listener on
// 127.0.0.1 for tests that need a TCP address; there roles log in with a
// password (scram-sha-256) and the superuser, which has none, is refused.
// Server.URL is the superuser's URL through the socket:
// postgres://postgres@/<database>?host=/tmp/outboxd-sock-<hash>&port=5432
// (the port only names the socket: 5432 unless configured), which psql
// accepts as it is (or: psql -h <socket directory> -U postgres <database>).
//
// The server runs in its own process group so that a Ctrl-C in a terminal
// reaches the application but not the database: the application drains its
// work and then calls Server.Stop, which asks for a fast shutdown and waits
// for it. On Linux the server is additionally told to shut down if the
// launching process dies without calling Stop.
//
// PostgreSQL refuses to run as root. When the caller is root, initdb and the
// server run as the "postgres" system user if there is one and as "nobody"
// otherwise, and the data directory and socket directory are handed over to
// that user; root, the client, still enters both (with "nobody", so can
// every process running as nobody: create a postgres user). If that user
// cannot reach the configured data directory (for example one under /root,
// which is usually mode 0700), the cluster lives instead in
// /var/tmp/outboxd-pg-<hash>/data, where <hash> is derived from the absolute
// configured path, and whose file data-dir.txt (OwnerFile) names that path.
// The configured directory thus stays the logical name of the
// cluster: the same Config.DataDir finds the same data on every run, and
// Server.DataDir reports where the files actually are.
package pglaunch
