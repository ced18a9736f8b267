// Package migrations holds outboxd's schema as embedded, numbered SQL files
// and applies them together with River's own migrations.
//
// Each outboxd migration runs in its own transaction. A whole run holds a
// session advisory lock so two processes migrating at once take turns
// instead of racing.
package migrations

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

//go:embed *.sql
var files embed.FS

// lockKey is the advisory lock held while migrating ("outboxd" in ASCII).
const lockKey int64 = 0x6f7574626f7864

// ErrNotMigrated is returned by Check when migrations are pending.
var ErrNotMigrated = errors.New("database is not migrated")

// Migration is one numbered outboxd schema change.
type Migration struct {
	Version int
	Name    string
	Up      string
	Down    string
}

// All returns outboxd's migrations in version order.
func All() []Migration {
	byVersion := map[int]*Migration{}
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		name := e.Name()
		direction := ""
		switch {
		case strings.HasSuffix(name, ".up.sql"):
			direction = "up"
		case strings.HasSuffix(name, ".down.sql"):
			direction = "down"
		default:
			continue
		}
		base := strings.TrimSuffix(name, "."+direction+".sql")
		num, label, ok := strings.Cut(base, "_")
		version, err := strconv.Atoi(num)
		if !ok || err != nil {
			panic("migrations: bad file name " + name)
		}
		body, err := fs.ReadFile(files, path.Join(".", name))
		if err != nil {
			panic(err)
		}
		m := byVersion[version]
		if m == nil {
			m = &Migration{Version: version, Name: label}
			byVersion[version] = m
		}
		if direction == "up" {
			m.Up = string(body)
		} else {
			m.Down = string(body)
		}
	}
	all := make([]Migration, 0, len(byVersion))
	for _, m := range byVersion {
		all = append(all, *m)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Version < all[j].Version })
	return all
}

// Status describes what is applied.
type Status struct {
	// Applied are the applied outboxd versions, ascending.
	Applied []int
	// Pending are the outboxd migrations not yet applied.
	Pending []Migration
	// RiverCurrent is River's highest applied version (0 when none).
	RiverCurrent int
	// RiverLatest is the highest version River ships.
	RiverLatest int
}

// Current reports whether nothing is pending. A database migrated by a
// newer release is current too: during a rolling upgrade the old processes
// keep reporting ready after `migrate up` has run.
func (s *Status) Current() bool {
	return len(s.Pending) == 0 && s.RiverCurrent >= s.RiverLatest
}

// Up applies River's migrations and then every pending outboxd migration.
// It returns the outboxd versions it applied.
func Up(ctx context.Context, pool *pgxpool.Pool) ([]int, error) {
	var applied []int
	err := withLock(ctx, pool, func(conn *pgx.Conn) error {
		if _, err := riverMigrator(pool).Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
			return fmt.Errorf("applying river migrations: %w", err)
		}
		done, err := appliedVersions(ctx, conn)
		if err != nil {
			return err
		}
		for _, m := range All() {
			if done[m.Version] {
				continue
			}
			err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, m.Up); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, `INSERT INTO outboxd_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name)
				return err
			})
			if err != nil {
				return fmt.Errorf("applying migration %03d_%s: %w", m.Version, m.Name, err)
			}
			applied = append(applied, m.Version)
		}
		return nil
	})
	return applied, err
}

// Down rolls back the last steps outboxd migrations. With all set it rolls
// back every outboxd migration and then River's, leaving an empty database.
func Down(ctx context.Context, pool *pgxpool.Pool, steps int, all bool) ([]int, error) {
	var reverted []int
	err := withLock(ctx, pool, func(conn *pgx.Conn) error {
		done, err := appliedVersions(ctx, conn)
		if err != nil {
			return err
		}
		migs := All()
		for i := len(migs) - 1; i >= 0 && (all || len(reverted) < steps); i-- {
			m := migs[i]
			if !done[m.Version] {
				continue
			}
			err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, m.Down); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, `DELETE FROM outboxd_migrations WHERE version = $1`, m.Version)
				return err
			})
			if err != nil {
				return fmt.Errorf("reverting migration %03d_%s: %w", m.Version, m.Name, err)
			}
			reverted = append(reverted, m.Version)
		}
		if !all {
			return nil
		}
		if _, err := conn.Exec(ctx, `DROP TABLE IF EXISTS outboxd_migrations`); err != nil {
			return err
		}
		_, err = riverMigrator(pool).Migrate(ctx, rivermigrate.DirectionDown, &rivermigrate.MigrateOpts{TargetVersion: -1})
		if err != nil {
			return fmt.Errorf("reverting river migrations: %w", err)
		}
		return nil
	})
	return reverted, err
}

// GetStatus reads what is applied without changing anything.
func GetStatus(ctx context.Context, pool *pgxpool.Pool) (*Status, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()

	st := &Status{}
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('outboxd_migrations') IS NOT NULL`).Scan(&exists); err != nil {
		return nil, err
	}
	done := map[int]bool{}
	if exists {
		if done, err = appliedVersions(ctx, conn.Conn()); err != nil {
			return nil, err
		}
	}
	for _, m := range All() {
		if done[m.Version] {
			st.Applied = append(st.Applied, m.Version)
		} else {
			st.Pending = append(st.Pending, m)
		}
	}

	migrator := riverMigrator(pool)
	riverAll := migrator.AllVersions()
	st.RiverLatest = riverAll[len(riverAll)-1].Version
	var riverExists bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('river_migration') IS NOT NULL`).Scan(&riverExists); err != nil {
		return nil, err
	}
	if riverExists {
		existing, err := migrator.ExistingVersions(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading river migrations: %w", err)
		}
		if len(existing) > 0 {
			st.RiverCurrent = existing[len(existing)-1].Version
		}
	}
	return st, nil
}

// Check returns an error wrapping ErrNotMigrated when anything is pending.
func Check(ctx context.Context, pool *pgxpool.Pool) error {
	st, err := GetStatus(ctx, pool)
	if err != nil {
		return fmt.Errorf("checking migrations: %w", err)
	}
	if !st.Current() {
		return fmt.Errorf("%w: %d outboxd and %d river migrations pending",
			ErrNotMigrated, len(st.Pending), st.RiverLatest-st.RiverCurrent)
	}
	return nil
}

// RiverLatest is the highest migration version of the linked River.
func RiverLatest() int {
	all := riverMigrator(nil).AllVersions()
	return all[len(all)-1].Version
}

func riverMigrator(pool *pgxpool.Pool) *rivermigrate.Migrator[pgx.Tx] {
	m, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		panic(err) // only fails on invalid static config
	}
	return m
}

func withLock(ctx context.Context, pool *pgxpool.Pool, fn func(conn *pgx.Conn) error) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("connecting: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, lockKey); err != nil {
		return fmt.Errorf("taking migration lock: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, lockKey) //nolint:errcheck
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS outboxd_migrations (
		version    integer     PRIMARY KEY,
		name       text        NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`); err != nil {
		return fmt.Errorf("creating outboxd_migrations: %w", err)
	}
	return fn(conn.Conn())
}

func appliedVersions(ctx context.Context, conn *pgx.Conn) (map[int]bool, error) {
	rows, err := conn.Query(ctx, `SELECT version FROM outboxd_migrations`)
	if err != nil {
		return nil, fmt.Errorf("reading outboxd_migrations: %w", err)
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return nil, err
	}
	done := make(map[int]bool, len(versions))
	for _, v := range versions {
		done[v] = true
	}
	return done, nil
}
