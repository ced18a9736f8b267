//go:build unix

package pglaunch

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

type testBundle struct {
	config *Config
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	return &testBundle{
		config: &Config{
			DataDir: filepath.Join(t.TempDir(), "data"),
			Logger:  slog.New(slog.NewTextHandler(t.Output(), nil)),
			Fast:    true,
		},
	}
}

// startServer starts a server that is stopped, and whose data is removed,
// when the test ends.
func startServer(t *testing.T, config *Config) *Server {
	t.Helper()
	s, err := Start(t.Context(), config)
	require.NoError(t, err)
	registerCleanup(t, s)
	return s
}

func registerCleanup(t *testing.T, s *Server) {
	t.Helper()
	t.Cleanup(func() {
		require.NoError(t, s.Stop(context.Background()))
		require.NoError(t, s.RemoveData())
	})
}

func queryInt(t *testing.T, url, sql string) int {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var n int
	require.NoError(t, conn.QueryRow(t.Context(), sql).Scan(&n))
	return n
}

func exec1(t *testing.T, url string, sqls ...string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	for _, sql := range sqls {
		_, err := conn.Exec(t.Context(), sql)
		require.NoError(t, err)
	}
}

func TestStart_RestartKeepsData(t *testing.T) {
	t.Parallel()
	bundle := setup(t)

	begin := time.Now()
	s := startServer(t, bundle.config)
	freshStart := time.Since(begin)

	require.Equal(t, 5432, s.Port(), "the socket is in a directory of its own, so the default port")
	require.Equal(t, socketDirFor(s.DataDir()), s.SocketDir())
	require.Equal(t, fmt.Sprintf("postgres://postgres@/app?host=%s&port=5432", s.SocketDir()), s.URL("app"))
	require.Empty(t, s.TCPURL("app", url.User("someone")), "no TCP")
	require.Equal(t, 1, queryInt(t, s.URL("postgres"), "SELECT 1"))
	require.Equal(t, 200, queryInt(t, s.URL("postgres"), "SELECT current_setting('max_connections')::int"))

	require.NoError(t, s.CreateDatabase(t.Context(), "app"))
	require.NoError(t, s.CreateDatabase(t.Context(), "app"))
	require.NoError(t, s.CreateDatabase(t.Context(), "Odd-Name ü"))
	exec1(t, s.URL("app"), "CREATE TABLE kept (v int)", "INSERT INTO kept VALUES (42)")
	require.Equal(t, 1, queryInt(t, s.URL("Odd-Name ü"), "SELECT 1"))

	require.NoError(t, s.Stop(t.Context()))
	require.NoError(t, s.Stop(t.Context()))
	_, err := pgx.Connect(t.Context(), s.URL("app"))
	require.Error(t, err)

	begin = time.Now()
	s2 := startServer(t, bundle.config)
	existingStart := time.Since(begin)

	require.Equal(t, s.DataDir(), s2.DataDir())
	require.Equal(t, s.URL("app"), s2.URL("app"), "a restarted server has the same URL")
	require.Equal(t, 42, queryInt(t, s.URL("app"), "SELECT v FROM kept"))

	log, err := os.ReadFile(s2.LogPath())
	require.NoError(t, err)
	require.Contains(t, string(log), "database system is ready to accept connections")
	require.FileExists(t, s2.LogPath()+".1")

	t.Logf("start on a fresh data directory: %s; on an existing one: %s (data in %s)",
		freshStart.Round(time.Millisecond), existingStart.Round(time.Millisecond), s.DataDir())
}

func TestStart_TwoServersAtOnce(t *testing.T) {
	t.Parallel()
	bundles := []*testBundle{setup(t), setup(t)}

	var (
		wg      sync.WaitGroup
		servers = make([]*Server, len(bundles))
		errs    = make([]error, len(bundles))
	)
	for i, bundle := range bundles {
		wg.Go(func() { servers[i], errs[i] = Start(t.Context(), bundle.config) })
	}
	wg.Wait()
	for _, s := range servers {
		if s != nil {
			registerCleanup(t, s)
		}
	}
	for _, err := range errs {
		require.NoError(t, err)
	}

	require.Equal(t, servers[0].Port(), servers[1].Port())
	require.NotEqual(t, servers[0].SocketDir(), servers[1].SocketDir())
	for i, s := range servers {
		exec1(t, s.URL("postgres"), fmt.Sprintf("CREATE TABLE server_%d ()", i))
	}
	require.Equal(t, 1, queryInt(t, servers[0].URL("postgres"), "SELECT count(*) FROM pg_tables WHERE tablename = 'server_0'"))
	require.Equal(t, 0, queryInt(t, servers[1].URL("postgres"), "SELECT count(*) FROM pg_tables WHERE tablename = 'server_0'"))
}

func TestStart_AlreadyRunning(t *testing.T) {
	t.Parallel()
	bundle := setup(t)
	startServer(t, bundle.config)

	_, err := Start(t.Context(), bundle.config)
	require.ErrorIs(t, err, ErrAlreadyRunning)
	require.ErrorContains(t, err, "already running")
}

func TestStart_RemovesStalePIDFile(t *testing.T) {
	t.Parallel()
	bundle := setup(t)
	s := startServer(t, bundle.config)
	require.NoError(t, s.Stop(t.Context()))

	require.NoDirExists(t, s.SocketDir(), "a stopped server's socket directory goes")

	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	pidFile := fmt.Sprintf("%d\n%s\n1700000000\n%d\n%s\n\n  1234  5678\nready   \n",
		dead.Process.Pid, s.DataDir(), s.Port(), s.SocketDir())
	require.NoError(t, os.WriteFile(filepath.Join(s.DataDir(), "postmaster.pid"), []byte(pidFile), 0o600))
	// What a killed launcher leaves in the socket directory: the socket
	// and its lock file, naming the dead server.
	info, err := os.Stat(s.DataDir())
	require.NoError(t, err)
	owner := info.Sys().(*syscall.Stat_t)
	require.NoError(t, os.Mkdir(s.SocketDir(), 0o700))
	lock := filepath.Join(s.SocketDir(), fmt.Sprintf(".s.PGSQL.%d.lock", s.Port()))
	require.NoError(t, os.WriteFile(lock, []byte(pidFile), 0o600))
	for _, path := range []string{s.SocketDir(), lock} {
		require.NoError(t, os.Lchown(path, int(owner.Uid), int(owner.Gid)))
	}

	s2 := startServer(t, bundle.config)
	require.Equal(t, 1, queryInt(t, s2.URL("postgres"), "SELECT 1"))
}

func TestServer_StopForcesWhenContextEnds(t *testing.T) {
	t.Parallel()
	bundle := setup(t)
	s, err := Start(t.Context(), bundle.config)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.RemoveData()) })

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.ErrorIs(t, s.Stop(ctx), context.Canceled)
	require.ErrorIs(t, s.Stop(t.Context()), context.Canceled)
	_, err = pgx.Connect(t.Context(), s.URL("postgres"))
	require.Error(t, err)

	s2 := startServer(t, bundle.config)
	require.Equal(t, 1, queryInt(t, s2.URL("postgres"), "SELECT 1"))
}

func TestServer_RemoveData(t *testing.T) {
	t.Parallel()
	bundle := setup(t)
	s, err := Start(t.Context(), bundle.config)
	require.NoError(t, err)

	require.ErrorContains(t, s.RemoveData(), "still running")
	require.NoError(t, s.Stop(t.Context()))
	require.NoError(t, s.RemoveData())
	require.NoDirExists(t, s.DataDir())
	require.NoDirExists(t, fallbackBase(bundle.config.DataDir))
}

func TestRemoveCluster(t *testing.T) {
	t.Parallel()
	bundle := setup(t)
	// As root, the 0700 temporary directory sends the cluster to the
	// fallback directory, which RemoveCluster must find from DataDir alone.
	s, err := Start(t.Context(), bundle.config)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Stop(context.Background()); _ = s.RemoveData() })

	_, err = RemoveCluster(bundle.config.DataDir)
	require.ErrorIs(t, err, ErrAlreadyRunning)
	require.DirExists(t, s.DataDir())

	require.NoError(t, s.Stop(t.Context()))
	removed, err := RemoveCluster(bundle.config.DataDir)
	require.NoError(t, err)
	require.NotEmpty(t, removed)
	require.NoDirExists(t, s.DataDir())
	require.NoDirExists(t, fallbackBase(bundle.config.DataDir))

	removed, err = RemoveCluster(bundle.config.DataDir)
	require.NoError(t, err)
	require.Empty(t, removed, "nothing left to remove")
}

func TestStart_PortTaken(t *testing.T) {
	t.Parallel()
	bundle := setup(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	bundle.config.Port = l.Addr().(*net.TCPAddr).Port
	bundle.config.TCP = true

	// The cluster is initialized before postgres fails; as root, that happens
	// in the fallback directory.
	t.Cleanup(func() { require.NoError(t, os.RemoveAll(fallbackBase(bundle.config.DataDir))) })

	_, err = Start(t.Context(), bundle.config)
	require.ErrorContains(t, err, "exited during start-up")
	require.ErrorContains(t, err, "Address already in use")
}

func TestStart_RejectsForeignDirectory(t *testing.T) {
	t.Parallel()
	bundle := setup(t)
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755))
	stray := filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(stray, []byte("mine"), 0o600))
	bundle.config.DataDir = dir

	_, err := Start(t.Context(), bundle.config)
	require.ErrorContains(t, err, "holds no PostgreSQL cluster")

	info, err := os.Stat(stray)
	require.NoError(t, err)
	require.Equal(t, uint32(os.Geteuid()), info.Sys().(*syscall.Stat_t).Uid)
}

func TestStart_InvalidConfig(t *testing.T) {
	t.Parallel()

	_, err := Start(t.Context(), &Config{})
	require.ErrorContains(t, err, "DataDir is required")

	_, err = Start(t.Context(), &Config{DataDir: t.TempDir(), BinDir: t.TempDir()})
	require.ErrorIs(t, err, ErrBinariesNotFound)
}

func TestStart_AsRoot(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("exercises the hand-over to an unprivileged user, which only root does")
	}

	t.Run("InPlaceWhenReachable", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		dir := filepath.Dir(bundle.config.DataDir)
		require.NoError(t, os.Chmod(dir, 0o755))
		require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755))
		bundle.config.DataDir = filepath.Join(dir, "nested", "data")

		s := startServer(t, bundle.config)
		require.Equal(t, bundle.config.DataDir, s.DataDir())

		acct, err := serverAccount()
		require.NoError(t, err)
		for _, path := range []string{s.DataDir(), filepath.Join(s.DataDir(), "PG_VERSION"), s.LogPath()} {
			info, err := os.Stat(path)
			require.NoError(t, err)
			require.Equal(t, acct.uid, info.Sys().(*syscall.Stat_t).Uid, path)
		}
		info, err := os.Stat(filepath.Dir(s.DataDir()))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o755), info.Mode().Perm())
	})

	t.Run("FallbackWhenUnreachable", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)

		s := startServer(t, bundle.config)
		require.True(t, strings.HasPrefix(s.DataDir(), filepath.Join(fallbackRoot, "outboxd-pg-")), s.DataDir())
		require.NoDirExists(t, bundle.config.DataDir)
		require.Equal(t, 1, queryInt(t, s.URL("postgres"), "SELECT 1"))
		owner, err := os.ReadFile(filepath.Join(filepath.Dir(s.DataDir()), OwnerFile))
		require.NoError(t, err)
		require.Equal(t, bundle.config.DataDir+"\n", string(owner), "the fallback directory names its data directory")
	})

	t.Run("ExistingClusterUnreachable", func(t *testing.T) {
		t.Parallel()
		bundle := setup(t)
		dir := filepath.Dir(bundle.config.DataDir)
		require.NoError(t, os.Chmod(dir, 0o755))
		require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755))

		s := startServer(t, bundle.config)
		require.NoError(t, s.Stop(t.Context()))
		require.NoError(t, os.Chmod(dir, 0o700))

		_, err := Start(t.Context(), bundle.config)
		require.ErrorContains(t, err, "cannot reach it")
	})
}

func TestFindBinDir(t *testing.T) {
	t.Parallel()

	dir, err := FindBinDir()
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(dir, "initdb"))
	require.FileExists(t, filepath.Join(dir, "postgres"))
}

func TestFindBinDir_Search(t *testing.T) {
	t.Parallel()

	root := t.TempDir()
	install := func(dir string, names ...string) string {
		dir = filepath.Join(root, dir)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		for _, name := range names {
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755))
		}
		return dir
	}
	install("lib/postgresql/9.6/bin", "initdb", "postgres")
	newest := install("lib/postgresql/16/bin", "initdb", "postgres")
	install("lib/postgresql/17/bin", "postgres") // Client-only or partial install.
	install("lib/postgresql/15/bin", "initdb", "postgres")
	unversioned := install("local/pgsql/bin", "initdb", "postgres", "pg_ctl")
	clientOnly := install("usr/bin", "psql", "postgres")
	globs := []string{filepath.Join(root, "lib/postgresql/*/bin"), filepath.Join(root, "local/pgsql/bin")}

	t.Run("HighestVersion", func(t *testing.T) {
		t.Parallel()
		dir, err := findBinDir(clientOnly, globs)
		require.NoError(t, err)
		require.Equal(t, newest, dir)
	})

	t.Run("PathWins", func(t *testing.T) {
		t.Parallel()
		dir, err := findBinDir(strings.Join([]string{clientOnly, unversioned}, string(os.PathListSeparator)), globs)
		require.NoError(t, err)
		require.Equal(t, unversioned, dir)
	})

	t.Run("NotFound", func(t *testing.T) {
		t.Parallel()
		_, err := findBinDir(clientOnly, []string{filepath.Join(root, "nowhere/*/bin")})
		require.ErrorIs(t, err, ErrBinariesNotFound)
		require.ErrorContains(t, err, "apt-get install postgresql")
		require.ErrorContains(t, err, "first in PATH", "names what a user can set, not a Go field")
	})
}

func TestPathVersion(t *testing.T) {
	t.Parallel()

	require.Equal(t, []int{15}, pathVersion("/usr/lib/postgresql/15/bin"))
	require.Equal(t, []int{9, 6}, pathVersion("/usr/lib/postgresql/9.6/bin"))
	require.Equal(t, []int{16}, pathVersion("/opt/homebrew/opt/postgresql@16/bin"))
	require.Equal(t, []int{16}, pathVersion("/usr/pgsql-16/bin"))
	require.Equal(t, []int{15}, pathVersion("/tmp/Test123/001/lib/postgresql/15/bin"))
	require.Nil(t, pathVersion("/usr/local/pgsql/bin"))
}

func TestStart_NoTCPUnlessAsked(t *testing.T) {
	t.Parallel()
	bundle := setup(t)
	port, err := freePort()
	require.NoError(t, err)
	bundle.config.Port = port
	s := startServer(t, bundle.config)

	for _, addr := range []string{"127.0.0.1", "::1"} {
		conn, err := net.Dial("tcp", net.JoinHostPort(addr, fmt.Sprint(port)))
		if err == nil {
			conn.Close()
		}
		require.Error(t, err, "nothing listens on %s port %d", addr, port)
	}
	require.Equal(t, 0, queryInt(t, s.URL("postgres"), "SELECT length(current_setting('listen_addresses'))"))
	require.Equal(t, 0, queryInt(t, s.URL("postgres"), "SELECT count(*) FROM pg_hba_file_rules WHERE type <> 'local' OR user_name <> '{postgres}'"),
		"pg_hba.conf lets in the superuser through the socket and nothing else")
	require.Less(t, len(s.SocketDir()+"/.s.PGSQL.65535"), 108, "fits in a socket address")
}

func TestStart_TCPTakesPasswordsOnly(t *testing.T) {
	t.Parallel()
	bundle := setup(t)
	bundle.config.TCP = true
	s := startServer(t, bundle.config)
	require.NotEqual(t, 5432, s.Port(), "a free port")
	exec1(t, s.URL("postgres"), "CREATE ROLE app LOGIN PASSWORD 'app-password'")

	require.Equal(t, 1, queryInt(t, s.TCPURL("postgres", url.UserPassword("app", "app-password")), "SELECT 1"))
	for _, user := range []*url.Userinfo{url.UserPassword("app", "wrong"), url.User("app"), url.User("postgres"), url.UserPassword("postgres", "")} {
		_, err := pgx.Connect(t.Context(), s.TCPURL("postgres", user))
		require.Error(t, err, user.String())
	}

	// A cluster made by an older version trusted every TCP connection; its
	// pg_hba.conf is replaced at the next start.
	require.NoError(t, s.Stop(t.Context()))
	require.NoError(t, os.WriteFile(filepath.Join(s.DataDir(), "pg_hba.conf"), []byte("local all all trust\nhost all all 127.0.0.1/32 trust\n"), 0o600))
	bundle.config.Port = s.Port()
	s2 := startServer(t, bundle.config)
	_, err := pgx.Connect(t.Context(), s2.TCPURL("postgres", url.User("postgres")))
	require.ErrorContains(t, err, "pg_hba.conf rejects connection")
	require.Equal(t, 1, queryInt(t, s2.TCPURL("postgres", url.UserPassword("app", "app-password")), "SELECT 1"))
}

func TestPrepareSocketDir(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	var acct *account
	if os.Geteuid() == 0 {
		var err error
		acct, err = serverAccount()
		require.NoError(t, err)
	}
	owner := uint32(os.Geteuid())
	if acct != nil {
		owner = acct.uid
	}

	dir := filepath.Join(root, "fresh")
	require.NoError(t, prepareSocketDir(dir, acct))
	info, err := os.Lstat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), info.Mode().Perm())
	require.Equal(t, owner, info.Sys().(*syscall.Stat_t).Uid)
	require.NoError(t, prepareSocketDir(dir, acct), "a directory left by a killed server is used again")

	open := filepath.Join(root, "open")
	require.NoError(t, os.Mkdir(open, 0o700))
	require.NoError(t, os.Chmod(open, 0o755))
	require.NoError(t, os.Lchown(open, int(owner), -1))
	require.ErrorContains(t, prepareSocketDir(open, acct), "no permission beyond 0700")

	link := filepath.Join(root, "link")
	require.NoError(t, os.Symlink(dir, link))
	require.ErrorContains(t, prepareSocketDir(link, acct), "refusing")

	if os.Geteuid() == 0 {
		// Someone else's directory, such as one planted in /tmp.
		foreign := filepath.Join(root, "foreign")
		require.NoError(t, os.Mkdir(foreign, 0o700))
		require.ErrorContains(t, prepareSocketDir(foreign, acct), "another user")
	}
}
