//go:build unix

// Package pglaunchtest checks, with a real client (psql), who can connect to
// a server started by pglaunch: its owner, and no other local user.
package pglaunchtest

import (
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/outboxd/outboxd/internal/platform/pglaunch"
)

// RequireOwnerOnly asserts that the server behind superuserURL (a
// Server.URL) answers the current user through its socket, that the socket
// directory is a 0700 directory, and that another user can connect neither
// through the socket nor, when tcpPort is not 0, as the superuser over TCP
// at 127.0.0.1:tcpPort. Running as root it runs psql as another uid;
// otherwise it cannot switch users, so it checks the socket directory's
// owner and mode instead and says loudly that the cross-user check did not
// run.
func RequireOwnerOnly(t testing.TB, superuserURL string, tcpPort int) {
	t.Helper()
	cfg, err := pgconn.ParseConfig(superuserURL)
	require.NoError(t, err)
	dir := cfg.Host
	require.True(t, filepath.IsAbs(dir), "the URL goes through a Unix socket: %s", superuserURL)

	info, err := os.Lstat(dir)
	require.NoError(t, err)
	require.True(t, info.IsDir(), dir)
	require.Equal(t, os.FileMode(0o700), info.Mode().Perm(), "socket directory %s", dir)
	owner := info.Sys().(*syscall.Stat_t).Uid
	if os.Geteuid() != 0 {
		require.Equal(t, uint32(os.Geteuid()), owner, "socket directory %s belongs to the user running the server", dir)
	} else {
		require.NotZero(t, owner, "as root the server, and its socket directory, belong to an unprivileged user")
	}

	psql := findPsql()
	if psql == "" {
		t.Skip("*** psql NOT FOUND (next to the server binaries or in PATH): the check that other users cannot connect DID NOT RUN")
	}
	out, err := runPsql(psql, nil, superuserURL)
	require.NoError(t, err, "the owner connects: %s", out)
	require.Equal(t, "1", strings.TrimSpace(out))

	tcpURL := "postgres://" + cfg.User + "@127.0.0.1:" + strconv.Itoa(tcpPort) + "/" + cfg.Database + "?sslmode=disable"
	if tcpPort != 0 {
		// Not even the owner gets in as the superuser over TCP.
		out, err := runPsql(psql, nil, tcpURL)
		require.Error(t, err, out)
		require.Contains(t, out, "pg_hba.conf rejects connection")
	}

	if os.Geteuid() != 0 {
		t.Logf("*** THE CROSS-USER CHECK DID NOT RUN: not root, so no client can run as another user; "+
			"checked instead that the socket directory %s is ours with mode 0700", dir)
		return
	}
	other := otherUser(t, owner)
	out, err = runPsql(psql, other, superuserURL)
	require.Error(t, err, "uid %d connected through the socket: %s", other.Uid, out)
	require.Contains(t, out, "Permission denied", "uid %d", other.Uid)
	if tcpPort != 0 {
		out, err := runPsql(psql, other, tcpURL)
		require.Error(t, err, "uid %d connected over TCP: %s", other.Uid, out)
		require.Contains(t, out, "pg_hba.conf rejects connection")
	}
	t.Logf("uid %d (not the server's uid %d) could not connect", other.Uid, owner)
}

// otherUser is nobody, or daemon when the server itself runs as nobody.
func otherUser(t testing.TB, serverUID uint32) *syscall.Credential {
	t.Helper()
	for _, name := range []string{"nobody", "daemon"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		if uint32(uid) != serverUID && uid != 0 {
			return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
		}
	}
	return &syscall.Credential{Uid: 54321, Gid: 54321, Groups: []uint32{}}
}

func findPsql() string {
	if dir, err := pglaunch.FindBinDir(); err == nil {
		if path := filepath.Join(dir, "psql"); fileExists(path) {
			return path
		}
	}
	path, _ := exec.LookPath("psql")
	return path
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// runPsql runs SELECT 1 on url with psql as cred (nil: as ourselves), with
// no password and no prompt, and returns its combined output.
func runPsql(psql string, cred *syscall.Credential, url string) (string, error) {
	cmd := exec.Command(psql, "-X", "-w", "-A", "-t", "-d", url, "-c", "SELECT 1")
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/", "LC_ALL=C", "PGCONNECT_TIMEOUT=5"}
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}
