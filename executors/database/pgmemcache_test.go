package database_test

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/executors/database"
	"github.com/outboxd/outboxd/executors/database/databasetest"
)

// TestPgmemcache_CannotReachOtherHosts: pgmemcache's functions (PUBLIC's
// once the extension is created) connect from the database server to any
// host and port an agent names (memcache_server_add) and write there
// (memcache_set, memcache_delete, memcache_flush_all), outside the
// read-only transaction and outboxd's private network guard. A role that
// may execute them is refused, and nothing reaches the named host; once
// they are revoked from PUBLIC it is accepted.
func TestPgmemcache_CannotReachOtherHosts(t *testing.T) {
	tg := databasetest.NewTarget(t)
	if err := adminExec(t, tg, `CREATE EXTENSION pgmemcache`); err != nil {
		t.Skipf("SKIPPED: the pgmemcache extension cannot be created on the test server (Debian: postgresql-15-pgmemcache; .ci/run installs it): %v", err)
	}
	// A listener that says what the database server sent it (memcached's
	// binary protocol: a set of the key and the value).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	got := make(chan string, 16)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				buf := make([]byte, 512)
				n, _ := conn.Read(buf)
				got <- fmt.Sprintf("%q", buf[:n])
			}()
		}
	}()

	src := newClient(t, nil).Source(database.Database{ID: uuid.New(), Name: "shop"})
	res, e := query(t, src, tg.URL, fmt.Sprintf(`SELECT memcache_server_add('%s'), memcache_set('outboxd', 'poisoned')`, ln.Addr()))
	require.Nil(t, res, "pgmemcache ran: %+v", res)
	require.NotNil(t, e)
	require.Equal(t, database.CodePrivilegedRole, e.Code, e.Message)
	select {
	case line := <-got:
		t.Fatalf("the database server wrote to the named host: %s", line)
	case <-time.After(200 * time.Millisecond):
	}
	requireConnectsRefused(t, tg.URL, "a function of pgmemcache")

	// Revoked as docs/api.md says, the role is accepted.
	require.NoError(t, adminExec(t, tg, `DO $$ DECLARE f regprocedure; BEGIN
		FOR f IN SELECT p.oid::regprocedure FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid AND d.deptype = 'e'
			JOIN pg_extension e ON e.oid = d.refobjid WHERE e.extname = 'pgmemcache' LOOP
			EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
		END LOOP; END $$`))
	requireConnectsRefusedNot(t, tg.URL)
}
