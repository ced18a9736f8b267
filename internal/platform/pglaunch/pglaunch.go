//go:build unix

package pglaunch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

const (
	// superuser is the role initdb creates and every URL connects as.
	superuser = "postgres"

	// defaultPort names the socket of a server without TCP.
	defaultPort = 5432

	logFileName = "postgres.log"

	readyTimeout      = 30 * time.Second
	readyPollInterval = 50 * time.Millisecond
	stopTimeout       = 30 * time.Second
	killTimeout       = 5 * time.Second
	failedStopTimeout = 5 * time.Second

	// portAttempts bounds retries when a picked port is taken between picking
	// it and the server binding it, as happens with parallel test binaries.
	portAttempts = 5
)

var (
	// ErrAlreadyRunning reports that a live server already uses the data
	// directory.
	ErrAlreadyRunning = errors.New("postgres already running")

	errPortInUse = errors.New("port in use")
)

// Config configures Start.
type Config struct {
	// DataDir is the cluster directory. Start creates it and runs initdb when
	// it holds no PG_VERSION file. Running as root, the cluster may live
	// elsewhere when the unprivileged server user cannot reach DataDir; see
	// the package documentation and Server.DataDir. Required.
	DataDir string

	// BinDir is the directory holding initdb and postgres. Default: the
	// result of FindBinDir.
	BinDir string

	// Port names the server's Unix socket (.s.PGSQL.<Port> in
	// Server.SocketDir) and, with TCP, is the TCP port at 127.0.0.1.
	// Default 0: 5432 without TCP (the socket directory is the server's
	// own, so nothing else uses that name), a free port with TCP.
	Port int

	// TCP makes the server listen on 127.0.0.1 too, where roles that have a
	// password log in with it (scram-sha-256) and the superuser, which has
	// none, is refused; see Server.TCPURL. For tests that need a TCP
	// address, such as a database source. Default false: the Unix socket
	// only.
	TCP bool

	// Logger receives start-up and shutdown events. The server's own log goes
	// to a file, not here (see Server.LogPath). Default: discard.
	Logger *slog.Logger

	// Fast turns off fsync, synchronous_commit and full_page_writes (and the
	// final sync of initdb), trading crash safety for speed; meant for tests.
	// Default false.
	Fast bool
}

// WithDefaults returns a copy of the config with defaults filled in, except
// BinDir, whose lookup can fail and is left to Start.
func (c *Config) WithDefaults() *Config {
	return &Config{
		DataDir: c.DataDir,
		BinDir:  c.BinDir,
		Port:    c.Port,
		TCP:     c.TCP,
		Logger:  cmp.Or(c.Logger, slog.New(slog.DiscardHandler)),
		Fast:    c.Fast,
	}
}

func (c *Config) validate() error {
	if c.DataDir == "" {
		return errors.New("DataDir is required")
	}
	if c.Port < 0 || c.Port > 65535 {
		return fmt.Errorf("Port %d is out of range", c.Port)
	}
	return nil
}

// Server is a running PostgreSQL server started by Start. Call Stop to shut
// it down.
type Server struct {
	dataDir string
	// fallback is the directory created to hold dataDir when root could not
	// use the configured one, or "".
	fallback string
	logPath  string
	// socketDir holds the server's Unix socket.
	socketDir string
	port      int
	tcp       bool
	logger    *slog.Logger

	cmd *exec.Cmd
	// exited is closed once the server process has exited and waitErr is set.
	exited  chan struct{}
	waitErr error
	// logOffset is where this process's output starts in the log file.
	logOffset int64

	stopOnce sync.Once
	stopErr  error
}

// Start launches a PostgreSQL server for cfg.DataDir, initializing the cluster
// first if needed, and returns once the server accepts connections. ctx bounds
// the start only; the server runs until Stop.
func Start(ctx context.Context, cfg *Config) (*Server, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	begin := time.Now()
	logger := cfg.Logger

	binDir := cfg.BinDir
	if binDir == "" {
		var err error
		if binDir, err = FindBinDir(); err != nil {
			return nil, err
		}
	} else if err := checkBinDir(binDir); err != nil {
		return nil, err
	}

	acct, err := serverAccount()
	if err != nil {
		return nil, err
	}
	dataDir, fallback, err := prepareDataDir(cfg.DataDir, acct, logger)
	if err != nil {
		return nil, err
	}
	if err := clearStalePIDFile(dataDir, logger); err != nil {
		return nil, err
	}

	var initdbOutput []byte
	initialized := false
	if _, err := os.Stat(filepath.Join(dataDir, "PG_VERSION")); errors.Is(err, os.ErrNotExist) {
		if initdbOutput, err = initdb(ctx, binDir, dataDir, acct, cfg.Fast); err != nil {
			return nil, err
		}
		initialized = true
	}

	logPath := filepath.Join(dataDir, logFileName)
	if err := rotateLog(logPath, initdbOutput, acct); err != nil {
		return nil, err
	}
	if err := writeHBA(dataDir, cfg.TCP, acct); err != nil {
		return nil, err
	}

	for attempt := 1; ; attempt++ {
		port := cfg.Port
		if port == 0 && !cfg.TCP {
			port = defaultPort
		}
		if port == 0 {
			if port, err = freePort(); err != nil {
				return nil, err
			}
		}
		s, err := launch(ctx, &launchParams{
			binDir:    binDir,
			dataDir:   dataDir,
			logPath:   logPath,
			socketDir: socketDirFor(dataDir),
			port:      port,
			tcp:       cfg.TCP,
			acct:      acct,
			fast:      cfg.Fast,
			logger:    logger,
		})
		if err == nil {
			s.fallback = fallback
			logger.InfoContext(ctx, "postgres started",
				"data_dir", dataDir, "socket_dir", s.socketDir, "port", port, "tcp", cfg.TCP, "bin_dir", binDir,
				"initialized", initialized, "duration_ms", time.Since(begin).Milliseconds())
			return s, nil
		}
		if cfg.Port != 0 || !cfg.TCP || attempt == portAttempts || !errors.Is(err, errPortInUse) {
			return nil, err
		}
		logger.DebugContext(ctx, "port taken before postgres could bind it; retrying", "port", port, "attempt", attempt)
	}
}

// DataDir returns the absolute directory holding the cluster. It differs from
// Config.DataDir when running as root with an unreachable DataDir.
func (s *Server) DataDir() string { return s.dataDir }

// LogPath returns the file receiving the server's log.
func (s *Server) LogPath() string { return s.logPath }

// PID returns the server's (the postmaster's) process id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Port returns the port that names the server's socket and, with
// Config.TCP, the TCP port it listens on at 127.0.0.1.
func (s *Server) Port() int { return s.port }

// SocketDir returns the directory holding the server's Unix socket, which
// only the user the server runs as (and root) can enter.
func (s *Server) SocketDir() string { return s.socketDir }

// URL returns a connection URL for database as the superuser, through the
// Unix socket: postgres://postgres@/<database>?host=<SocketDir>&port=<Port>.
func (s *Server) URL(database string) string {
	query := url.Values{"host": {s.socketDir}, "port": {strconv.Itoa(s.port)}}
	u := url.URL{
		Scheme: "postgres",
		User:   url.User(superuser),
		Path:   "/" + database,
		// Slashes need no escaping in a query; keeping them makes the
		// URL readable where it is printed.
		RawQuery: strings.ReplaceAll(query.Encode(), "%2F", "/"),
	}
	return u.String()
}

// TCPURL returns a URL for database on 127.0.0.1 as user, who must have a
// password (the superuser is refused there), or "" without Config.TCP.
func (s *Server) TCPURL(database string, user *url.Userinfo) string {
	if !s.tcp {
		return ""
	}
	u := url.URL{
		Scheme:   "postgres",
		User:     user,
		Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)),
		Path:     "/" + database,
		RawQuery: "sslmode=disable",
	}
	return u.String()
}

// CreateDatabase creates database name unless it already exists, so callers
// can run it on every start.
func (s *Server) CreateDatabase(ctx context.Context, name string) error {
	cfg, err := pgx.ParseConfig(s.URL("postgres"))
	if err != nil {
		return fmt.Errorf("creating database %q: %w", name, err)
	}
	return CreateDatabase(ctx, cfg, name)
}

// CreateDatabase creates database name, unless it already exists, on the
// server cfg reaches; cfg's own database (usually the maintenance database
// "postgres") is only where the statement runs. Any server will do, not
// only an embedded one, given a role allowed to create databases.
func CreateDatabase(ctx context.Context, cfg *pgx.ConnConfig, name string) error {
	if name == "" {
		return errors.New("creating database: empty name")
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("creating database %q: %w", name, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))

	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "42P04": // duplicate_database
			return nil
		case pgErr.Code == "23505" && pgErr.ConstraintName == "pg_database_datname_index":
			// A concurrent CREATE DATABASE of the same name won the race.
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("creating database %q: %w", name, err)
	}
	return nil
}

// Stop shuts the server down with a fast shutdown (SIGINT: connections are
// closed, then a checkpoint is written) and waits for it to exit. If that
// takes longer than 30 seconds or ctx ends first, it escalates to an immediate
// shutdown and then kills the server's process group, so the server is gone
// when Stop returns either way. Further calls return the first call's result.
func (s *Server) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() { s.stopErr = s.stop(ctx, stopTimeout) })
	return s.stopErr
}

func (s *Server) stop(ctx context.Context, timeout time.Duration) error {
	select {
	case <-s.exited:
		return fmt.Errorf("postgres exited before Stop (%v); log %s ends:\n%s", s.waitErr, s.logPath, s.logTail())
	default:
	}

	begin := time.Now()
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var reason error
	select {
	case <-s.exited:
	case <-timer.C:
		reason = fmt.Errorf("postgres did not shut down within %s", timeout)
	case <-ctx.Done():
		reason = fmt.Errorf("stopping postgres: %w", ctx.Err())
	}
	if reason != nil {
		s.logger.WarnContext(ctx, "forcing postgres to stop", "port", s.port, "reason", reason)
		s.forceExit()
		return reason
	}
	s.logger.InfoContext(ctx, "postgres stopped", "port", s.port, "duration_ms", time.Since(begin).Milliseconds())
	if s.waitErr != nil {
		return fmt.Errorf("postgres shut down with %v; log %s ends:\n%s", s.waitErr, s.logPath, s.logTail())
	}
	return nil
}

// forceExit requests an immediate shutdown and, failing that, kills the
// server's whole process group, then waits for the server to exit.
func (s *Server) forceExit() {
	_ = s.cmd.Process.Signal(syscall.SIGQUIT)
	timer := time.NewTimer(killTimeout)
	defer timer.Stop()
	select {
	case <-s.exited:
		return
	case <-timer.C:
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.exited
}

// RemoveData deletes the cluster, and the fallback directory holding it if
// there is one, after Stop. Clusters made for a single test run should call
// it: removing only Config.DataDir leaves a fallback copy behind.
func (s *Server) RemoveData() error {
	select {
	case <-s.exited:
	default:
		return errors.New("removing postgres data: the server is still running; call Stop first")
	}
	dir := cmp.Or(s.fallback, s.dataDir)
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing postgres data: %w", err)
	}
	return nil
}

type launchParams struct {
	binDir    string
	dataDir   string
	logPath   string
	socketDir string
	port      int
	tcp       bool
	acct      *account
	fast      bool
	logger    *slog.Logger
}

// launch runs the server process on one port and waits until it is ready.
func launch(ctx context.Context, p *launchParams) (*Server, error) {
	if err := prepareSocketDir(p.socketDir, p.acct); err != nil {
		return nil, err
	}
	listen := ""
	if p.tcp {
		listen = "127.0.0.1"
	}
	args := []string{
		"-D", p.dataDir,
		"-p", strconv.Itoa(p.port),
		"-c", "listen_addresses=" + listen,
		"-c", "unix_socket_directories=" + p.socketDir,
		"-c", "unix_socket_permissions=0700",
		"-c", "password_encryption=scram-sha-256",
		"-c", "max_connections=200",
	}
	if p.fast {
		args = append(args,
			"-c", "fsync=off",
			"-c", "synchronous_commit=off",
			"-c", "full_page_writes=off",
		)
	}

	logFile, err := os.OpenFile(p.logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening postgres log: %w", err)
	}
	// The child gets its own copy of the descriptor, so ours can go once the
	// process has started.
	defer logFile.Close()
	info, err := logFile.Stat()
	if err != nil {
		return nil, fmt.Errorf("opening postgres log: %w", err)
	}

	cmd := exec.Command(filepath.Join(p.binDir, "postgres"), args...)
	cmd.Dir = p.dataDir
	cmd.Env = childEnv(p.acct)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if p.acct != nil {
		cmd.SysProcAttr.Credential = p.acct.credential()
	}
	setParentDeathSignal(cmd.SysProcAttr)
	if err := cmd.Start(); err != nil {
		return nil, errors.Join(fmt.Errorf("starting postgres: %w", err), removeSocketDir(p.socketDir))
	}

	s := &Server{
		dataDir:   p.dataDir,
		logPath:   p.logPath,
		socketDir: p.socketDir,
		port:      p.port,
		tcp:       p.tcp,
		logger:    p.logger,
		cmd:       cmd,
		exited:    make(chan struct{}),
		logOffset: info.Size(),
	}
	go func() {
		s.waitErr = cmd.Wait()
		// The server has removed its socket and lock file, unless it was
		// killed.
		if err := removeSocketDir(p.socketDir); err != nil {
			p.logger.Warn("removing postgres socket directory", "dir", p.socketDir, "error", err)
		}
		close(s.exited)
	}()

	if err := s.waitReady(ctx); err != nil {
		_ = s.stop(context.WithoutCancel(ctx), failedStopTimeout)
		return nil, err
	}
	return s, nil
}

// waitReady polls until the server accepts connections, and fails early with
// the server's log if it exits.
func (s *Server) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	connConfig, err := pgx.ParseConfig(s.URL("postgres"))
	if err != nil {
		return fmt.Errorf("parsing server URL: %w", err)
	}
	connConfig.ConnectTimeout = time.Second

	ticker := time.NewTicker(readyPollInterval)
	defer ticker.Stop()
	for {
		select {
		case <-s.exited:
			return s.startupExitError()
		default:
		}
		lastErr := s.probe(ctx, connConfig)
		if lastErr == nil {
			return nil
		}
		select {
		case <-s.exited:
			return s.startupExitError()
		case <-ctx.Done():
			return fmt.Errorf("waiting for postgres on %s (port %d): %w (last attempt: %v); log %s ends:\n%s",
				s.socketDir, s.port, ctx.Err(), lastErr, s.logPath, s.logTail())
		case <-ticker.C:
		}
	}
}

// probe connects once and checks that the server answering is ours, not one
// that took the port while ours failed to bind it.
func (s *Server) probe(ctx context.Context, connConfig *pgx.ConnConfig) error {
	conn, err := pgx.ConnectConfig(ctx, connConfig)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var dir string
	if err := conn.QueryRow(ctx, "SELECT current_setting('data_directory')").Scan(&dir); err != nil {
		return err
	}
	if !sameFile(dir, s.dataDir) {
		return fmt.Errorf("%s (port %d) is served by another server, with data directory %s", s.socketDir, s.port, dir)
	}
	return nil
}

func (s *Server) startupExitError() error {
	tail := s.logTail()
	err := fmt.Errorf("postgres exited during start-up (%v); log %s ends:\n%s", s.waitErr, s.logPath, tail)
	if strings.Contains(tail, "could not bind") || strings.Contains(tail, "could not create any TCP/IP sockets") {
		return fmt.Errorf("%w: %w", errPortInUse, err)
	}
	return err
}

// logTail returns the last lines this server wrote to its log.
func (s *Server) logTail() string {
	const maxBytes, maxLines = 8 << 10, 30
	f, err := os.Open(s.logPath)
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	offset := max(s.logOffset, info.Size()-maxBytes)
	data, err := io.ReadAll(io.NewSectionReader(f, offset, info.Size()-offset))
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > maxLines {
		lines = lines[len(lines)-maxLines:]
	}
	return strings.Join(lines, "\n")
}

// initdb creates the cluster and returns initdb's output for the log.
func initdb(ctx context.Context, binDir, dataDir string, acct *account, fast bool) ([]byte, error) {
	args := []string{
		"-D", dataDir,
		// Replaced by writeHBA before the server starts.
		"--auth-local=trust",
		"--auth-host=reject",
		"--username=" + superuser,
		"--encoding=UTF8",
		"--locale=C",
	}
	if fast {
		args = append(args, "--no-sync")
	}
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "initdb"), args...)
	cmd.Dir = filepath.Dir(dataDir)
	cmd.Env = childEnv(acct)
	// initdb's own children inherit its output pipe; do not wait on them
	// forever if initdb is killed.
	cmd.WaitDelay = 5 * time.Second
	if acct != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: acct.credential()}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("initializing cluster in %s: initdb: %w\n%s", dataDir, err, out)
	}
	return out, nil
}

// rotateLog keeps the previous run's log as postgres.log.1, which tells what
// happened to a server that crashed, and starts the new log with initdb's
// output, if any.
func rotateLog(path string, initdbOutput []byte, acct *account) error {
	if err := os.Rename(path, path+".1"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("rotating postgres log: %w", err)
	}
	if err := os.WriteFile(path, initdbOutput, 0o600); err != nil {
		return fmt.Errorf("creating postgres log: %w", err)
	}
	if acct != nil {
		if err := chownTo(path, acct); err != nil {
			return fmt.Errorf("creating postgres log: %w", err)
		}
	}
	return nil
}

// childEnv is the environment of initdb and postgres: ours, except that as
// root the identity variables name the server user.
func childEnv(acct *account) []string {
	env := os.Environ()
	if acct == nil {
		return env
	}
	home := acct.home
	if info, err := os.Stat(home); err != nil || !info.IsDir() {
		home = "/"
	}
	filtered := env[:0:0]
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "HOME", "USER", "LOGNAME":
			continue
		}
		filtered = append(filtered, kv)
	}
	return append(filtered, "HOME="+home, "USER="+acct.name, "LOGNAME="+acct.name)
}

// freePort asks the kernel for a free port on 127.0.0.1. Another process can
// take it before the server binds it; Start retries when that happens.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("picking a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// clearStalePIDFile removes a postmaster.pid left by a server that is gone,
// which PostgreSQL itself may take for a live one when the recorded PID now
// belongs to another process, and refuses to go on when the server is alive.
func clearStalePIDFile(dataDir string, logger *slog.Logger) error {
	path := filepath.Join(dataDir, "postmaster.pid")
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	lines := strings.Split(string(data), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil || pid == 0 {
		// Leave a malformed file for PostgreSQL to judge and report.
		return nil
	}
	pid = max(pid, -pid) // Single-user backends record their PID negated.
	if postgresUsesDir(pid, dataDir) {
		port := "unknown"
		if len(lines) > 3 {
			port = strings.TrimSpace(lines[3])
		}
		return fmt.Errorf("%w: pid %d (port %s) uses data directory %s; stop it or use another data directory",
			ErrAlreadyRunning, pid, port, dataDir)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("removing stale %s: %w", path, err)
	}
	logger.Info("removed stale postmaster.pid left by a previous run", "data_dir", dataDir, "pid", pid)
	return nil
}

// postgresUsesDir reports whether process pid may be a server using dataDir.
// Where /proc tells more it is used, because PIDs are reused, notably in
// containers after a restart; elsewhere any live process counts.
func postgresUsesDir(pid int, dataDir string) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	if cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid)); err == nil {
		return sameFile(cwd, dataDir)
	}
	if comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); err == nil {
		name := strings.TrimSpace(string(comm))
		return name == "postgres" || name == "postmaster"
	}
	return true
}

func sameFile(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ai, err := os.Stat(a)
	if err != nil {
		return false
	}
	bi, err := os.Stat(b)
	if err != nil {
		return false
	}
	return os.SameFile(ai, bi)
}
