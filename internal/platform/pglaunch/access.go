//go:build unix

package pglaunch

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// socketRoot holds the servers' socket directories. It is short on purpose:
// a socket's path (directory, "/.s.PGSQL.", port) must fit in 107 bytes,
// which a data directory under a test's temporary directory may not.
var socketRoot = "/tmp"

// socketDirFor returns the directory of the Unix socket of the server on
// the physical data directory dataDir: named after that directory, so that
// a restarted server is reached at the same URL.
func socketDirFor(dataDir string) string {
	sum := sha256.Sum256([]byte(dataDir))
	return filepath.Join(socketRoot, "outboxd-sock-"+hex.EncodeToString(sum[:])[:12])
}

// prepareSocketDir creates dir, mode 0700 and owned by the user the server
// runs as (acct, or the caller when acct is nil), so that nobody else can
// reach the socket in it; a directory left by a killed server is used again.
func prepareSocketDir(dir string, acct *account) error {
	uid, gid := uint32(os.Geteuid()), uint32(os.Getegid())
	if acct != nil {
		uid, gid = acct.uid, acct.gid
	}
	return claimDir(dir, 0o700, uid, gid, "socket directory")
}

// removeSocketDir removes a server's socket directory and what a killed
// server left in it; a directory that is not a plain directory is left
// alone.
func removeSocketDir(dir string) error {
	info, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil || !info.IsDir() {
		return err
	}
	return os.RemoveAll(dir)
}

// writeHBA replaces the cluster's pg_hba.conf, on every start so that a
// cluster made by an older version (which trusted TCP) is fixed too: the
// superuser, without a password, through the Unix socket only, whose
// directory only the server's user (and root) can enter; and, with tcp,
// other roles by password on 127.0.0.1, never the superuser.
func writeHBA(dataDir string, tcp bool, acct *account) error {
	conf := "# Written by outboxd (internal/platform/pglaunch) at every start: edits here are lost.\n" +
		"# TYPE  DATABASE  USER      ADDRESS       METHOD\n" +
		"local   all       " + superuser + "  trust\n"
	if tcp {
		conf += "host    all       " + superuser + "  127.0.0.1/32  reject\n" +
			"host    all       all       127.0.0.1/32  scram-sha-256\n"
	}
	path := filepath.Join(dataDir, "pg_hba.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		return fmt.Errorf("writing pg_hba.conf: %w", err)
	}
	if acct != nil {
		if err := chownTo(path, acct); err != nil {
			return fmt.Errorf("writing pg_hba.conf: %w", err)
		}
	}
	return nil
}
