// Package pgtest gives each test its own real, migrated Postgres database.
//
// With TEST_DATABASE_URL set, databases are created on that server (the role
// needs CREATEDB). Otherwise the first test to ask starts a private server
// from the installed PostgreSQL binaries (internal/platform/pglaunch) in a temporary
// directory, and Main stops it when the package's tests end. Only the user
// running the tests can connect to it as the superuser, through its Unix
// socket; it also listens on 127.0.0.1, for roles with a password only
// (PasswordURL). Each test's
// database is a copy of a template migrated once, so a new database costs a
// CREATE DATABASE, not a migration run; it is dropped when the test ends.
package pgtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/goleak"

	"github.com/outboxd/outboxd/internal/platform/pglaunch"
	"github.com/outboxd/outboxd/migrations"
)

// lockKey serializes template creation and copies across test processes
// sharing one server.
const lockKey int64 = 0x6f7574626f7874

var (
	once     sync.Once
	onceErr  error
	adminURL string
	template string
	server   *pglaunch.Server
	tmpDir   string
)

// Main runs the package's tests, stops the private server, if one was
// started, and fails the run when the tests leaked goroutines. Call it from
// TestMain: os.Exit(pgtest.Main(m)).
func Main(m *testing.M) int {
	before := goleak.IgnoreCurrent()
	code := m.Run()
	if server != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := server.Stop(ctx); err != nil {
			log.Printf("pgtest: stopping postgres: %v", err)
		} else if err := server.RemoveData(); err != nil {
			log.Printf("pgtest: removing postgres data: %v", err)
		}
		cancel()
	}
	if tmpDir != "" {
		os.RemoveAll(tmpDir)
	}
	if code == 0 {
		if err := goleak.Find(before); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	return code
}

// URL creates a fresh migrated database for t and returns its URL. The
// database is dropped when t ends.
func URL(t testing.TB) string {
	t.Helper()
	once.Do(func() { onceErr = setup() })
	if onceErr != nil {
		t.Fatalf("pgtest: %v", onceErr)
	}
	ctx := context.Background()
	name := "t_" + randomSuffix()
	err := withAdmin(ctx, func(conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %s TEMPLATE %s`, name, template))
		return err
	})
	if err != nil {
		t.Fatalf("pgtest: creating database: %v", err)
	}
	t.Cleanup(func() {
		err := withAdmin(context.Background(), func(conn *pgx.Conn) error {
			_, err := conn.Exec(context.Background(), fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, name))
			return err
		})
		if err != nil {
			t.Errorf("pgtest: dropping database: %v", err)
		}
	})
	return withDatabase(adminURL, name)
}

// PasswordURL returns the URL of the database of dbURL (a URL from URL) for
// role, which logs in with password. On the private server that URL is a
// TCP one: the superuser's goes through the Unix socket, which a client
// that only takes host:port, such as a database source, cannot use.
func PasswordURL(dbURL, role, password string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		panic(err)
	}
	if server != nil {
		return server.TCPURL(strings.TrimPrefix(u.Path, "/"), url.UserPassword(role, password))
	}
	u.User = url.UserPassword(role, password)
	return u.String()
}

// Server returns the package's private server, or nil when the tests run
// on TEST_DATABASE_URL's server (or before the first URL).
func Server() *pglaunch.Server { return server }

// Pool is URL with a pool that is closed when t ends.
func Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), URL(t))
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

func setup() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adminURL = os.Getenv("TEST_DATABASE_URL")
	if adminURL == "" {
		dir, err := os.MkdirTemp("", "outboxd-pgtest-")
		if err != nil {
			return err
		}
		tmpDir = dir
		// MkdirTemp makes 0700 dirs; when running as root the server runs as
		// an unprivileged user and must be able to reach its data.
		if err := os.Chmod(dir, 0o755); err != nil {
			return err
		}
		server, err = pglaunch.Start(ctx, &pglaunch.Config{DataDir: dir + "/pg", Fast: true, TCP: true})
		if err != nil {
			return fmt.Errorf("starting a private postgres (set TEST_DATABASE_URL to use a server of yours): %w", err)
		}
		adminURL = server.URL("postgres")
	}
	template = "outboxd_tmpl_" + schemaHash()
	return withAdmin(ctx, func(conn *pgx.Conn) error {
		var exists bool
		if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, template).Scan(&exists); err != nil {
			return err
		}
		if exists {
			return nil
		}
		building := template + "_build"
		if _, err := conn.Exec(ctx, fmt.Sprintf(`DROP DATABASE IF EXISTS %s WITH (FORCE)`, building)); err != nil {
			return err
		}
		if _, err := conn.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %s`, building)); err != nil {
			return err
		}
		pool, err := pgxpool.New(ctx, withDatabase(adminURL, building))
		if err != nil {
			return err
		}
		_, err = migrations.Up(ctx, pool)
		pool.Close()
		if err != nil {
			return fmt.Errorf("migrating template: %w", err)
		}
		_, err = conn.Exec(ctx, fmt.Sprintf(`ALTER DATABASE %s RENAME TO %s`, building, template))
		return err
	})
}

// withAdmin runs fn on a connection to the admin database holding the
// cross-process lock.
func withAdmin(ctx context.Context, fn func(conn *pgx.Conn) error) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, lockKey); err != nil {
		return err
	}
	return fn(conn)
}

// schemaHash names the template after the migrations, so a schema change
// builds a new one instead of reusing a stale copy.
func schemaHash() string {
	h := sha256.New()
	for _, m := range migrations.All() {
		fmt.Fprintf(h, "%d\x00%s\x00", m.Version, m.Up)
	}
	fmt.Fprintf(h, "river:%d", riverLatest())
	return hex.EncodeToString(h.Sum(nil))[:12]
}

func riverLatest() int {
	return migrations.RiverLatest()
}

func withDatabase(rawURL, db string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		panic(err)
	}
	u.Path = "/" + db
	return u.String()
}

func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
