// Package databases is the database kind of org-registered source: the
// Postgres databases an organization registers (CRUD), and the catalog's
// view of them (Kind). Its rows live in databasestore; the database client
// runs the calls.
package databases

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outboxd/outboxd/executors/database"
	"github.com/outboxd/outboxd/executors/database/databasestore"
	"github.com/outboxd/outboxd/internal/domain/catalog"
	"github.com/outboxd/outboxd/internal/domain/errs"
	"github.com/outboxd/outboxd/internal/domain/orgsource"
)

// Service manages an organization's registered databases.
type Service struct {
	store  *databasestore.Store
	client *database.Client
	urls   URLReader
	grants orgsource.GrantRevoker
	max    int
}

// DefaultMaxPerOrg is New's default of how many databases one
// organization may register.
const DefaultMaxPerOrg = 50

// New returns a Service storing databases in store and running them with
// client; urls reads a database's URL when it is tested, and grants
// revokes the grants of a database given another URL (nil revokes none).
// One organization may register at most maxPerOrg databases
// (databases.max_per_org; 0: DefaultMaxPerOrg): each gets a connection
// pool of its own in every worker that calls it, and a rate bucket.
func New(store *databasestore.Store, client *database.Client, urls URLReader, grants orgsource.GrantRevoker, maxPerOrg int) *Service {
	return &Service{store: store, client: client, urls: urls, grants: grants, max: cmp.Or(maxPerOrg, DefaultMaxPerOrg)}
}

// Input creates or patches a registered database; nil fields are unchanged
// on patch. URL is write-only: stored sealed, never returned.
type Input struct {
	Name *string
	URL  *string
	// StatementTimeout is a duration such as "10s".
	StatementTimeout *string
	MaxRows          *int
}

// View is what the service shows of a registered database: of its URL,
// only the host and the database name.
type View struct {
	ID       uuid.UUID
	SourceID string
	Name     string
	Host     string
	Database string
	// StatementTimeout is StatementTimeoutMs as a duration ("10s").
	StatementTimeout   string
	StatementTimeoutMs int32
	MaxRows            int32
	CreatedBy          string
	CreatedAt          time.Time
	UpdatedAt          time.Time
}

func view(row *databasestore.Row) View {
	return View{
		ID: row.ID, SourceID: database.SourceID(row.ID), Name: row.Name, Host: row.Host, Database: row.Database,
		StatementTimeout:   (time.Duration(row.StatementTimeoutMs) * time.Millisecond).String(),
		StatementTimeoutMs: row.StatementTimeoutMs, MaxRows: row.MaxRows,
		CreatedBy: row.CreatedBy, CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt,
	}
}

// apply checks in's fields and applies them to f. A URL is checked (its
// host and database become f's) but returned only to be sealed.
func (s *Service) apply(f *databasestore.Fields, in *Input) error {
	if in.Name != nil {
		f.Name = strings.TrimSpace(*in.Name)
	}
	if err := orgsource.CheckName(f.Name); err != nil {
		return err
	}
	if in.URL != nil {
		if err := orgsource.CheckURLLength(strings.TrimSpace(*in.URL)); err != nil {
			return err
		}
		target, err := database.CheckURL(strings.TrimSpace(*in.URL), s.client.AllowPrivateNetworks())
		if err != nil {
			return errs.Invalid("url", "%s", err.Error())
		}
		f.Host, f.Database = target.Host, target.Database
	}
	if in.StatementTimeout != nil {
		d, err := time.ParseDuration(strings.TrimSpace(*in.StatementTimeout))
		if err != nil || d < database.MinStatementTimeout || d > database.MaxStatementTimeout {
			return errs.Invalid("statement_timeout", "statement_timeout must be a duration from %s to %s, such as \"10s\"",
				database.MinStatementTimeout, database.MaxStatementTimeout)
		}
		f.StatementTimeoutMs = int32(d.Milliseconds())
	}
	if in.MaxRows != nil {
		if *in.MaxRows < 1 || *in.MaxRows > database.MaxMaxRows {
			return errs.Invalid("max_rows", "max_rows must be from 1 to %d", database.MaxMaxRows)
		}
		f.MaxRows = int32(*in.MaxRows)
	}
	return nil
}

// Create registers a database for org, with its URL sealed in the
// credential store in the same transaction. A URL whose role is
// privileged is refused (*database.PrivilegedRoleError) when the database
// can be reached now. One past the organization's cap is errs.Conflict
// and is not kept.
func (s *Service) Create(ctx context.Context, org, by string, in *Input) (View, error) {
	if in.URL == nil || strings.TrimSpace(*in.URL) == "" {
		return View{}, errs.Invalid("url", "url is required: postgres://user:password@host:5432/database")
	}
	f := databasestore.Fields{StatementTimeoutMs: int32(database.DefaultStatementTimeout.Milliseconds()), MaxRows: database.DefaultMaxRows}
	if err := s.apply(&f, in); err != nil {
		return View{}, err
	}
	if err := s.client.CheckRole(ctx, strings.TrimSpace(*in.URL)); err != nil {
		return View{}, err
	}
	row, err := s.store.Create(ctx, org, by, &f, strings.TrimSpace(*in.URL))
	if orgsource.IsConflict(err) {
		return View{}, fmt.Errorf("%w: a database named %q exists", errs.Conflict, f.Name)
	}
	if err != nil {
		return View{}, fmt.Errorf("creating database: %w", err)
	}
	err = orgsource.KeepWithinCap(ctx, s.max, "databases", "databases.max_per_org",
		func(ctx context.Context) (int, error) {
			rows, err := s.store.List(ctx, org)
			return len(rows), err
		},
		func(ctx context.Context) error {
			return s.store.Delete(ctx, org, row.ID, orgsource.NotFound("database", row.ID.String()))
		})
	if err != nil {
		return View{}, err
	}
	return view(&row), nil
}

// Update patches a database; a new URL replaces the sealed one. A new URL
// may name another server, database or role: the grants of its actions,
// made for the old one, are revoked in the same transaction, and revoked
// are their ids. A new URL is checked as Create checks it.
func (s *Service) Update(ctx context.Context, org, id, by string, in *Input) (v View, revoked []uuid.UUID, err error) {
	uid, err := parseID(id)
	if err != nil {
		return View{}, nil, err
	}
	if in.URL != nil && strings.TrimSpace(*in.URL) == "" {
		return View{}, nil, errs.Invalid("url", "url must not be empty")
	}
	if in.URL != nil {
		// Before the row is locked: connecting may take seconds. A URL
		// apply refuses is not connected to.
		if err := s.client.CheckRole(ctx, strings.TrimSpace(*in.URL)); err != nil {
			return View{}, nil, err
		}
	}
	var then func(ctx context.Context, tx pgx.Tx) error
	if s.grants != nil && in.URL != nil {
		then = func(ctx context.Context, tx pgx.Tx) (err error) {
			revoked, err = s.grants.RevokeSource(ctx, tx, org, database.SourceID(uid))
			return err
		}
	}
	row, err := s.store.Update(ctx, org, by, uid, orgsource.NotFound("database", id), func(cur *databasestore.Row) (*databasestore.Fields, string, error) {
		f := databasestore.Fields{Name: cur.Name, Host: cur.Host, Database: cur.Database, StatementTimeoutMs: cur.StatementTimeoutMs, MaxRows: cur.MaxRows}
		if err := s.apply(&f, in); err != nil {
			return nil, "", err
		}
		url := ""
		if in.URL != nil {
			url = strings.TrimSpace(*in.URL)
		}
		return &f, url, nil
	}, then)
	if orgsource.IsConflict(err) {
		return View{}, nil, fmt.Errorf("%w: another database has that name", errs.Conflict)
	}
	if err != nil {
		return View{}, nil, err
	}
	s.dropPool(uid)
	return view(&row), revoked, nil
}

// Delete removes a database and its sealed URL. Invocations of it not yet
// run fail with unknown_source.
func (s *Service) Delete(ctx context.Context, org, id string) error {
	uid, err := parseID(id)
	if err != nil {
		return err
	}
	if err := s.store.Delete(ctx, org, uid, orgsource.NotFound("database", id)); err != nil {
		return err
	}
	s.dropPool(uid)
	return nil
}

// Get returns one database of org.
func (s *Service) Get(ctx context.Context, org, id string) (View, error) {
	uid, err := parseID(id)
	if err != nil {
		return View{}, err
	}
	row, ok, err := s.store.Get(ctx, org, uid)
	if err != nil {
		return View{}, err
	}
	if !ok {
		return View{}, orgsource.NotFound("database", id)
	}
	return view(&row), nil
}

// List returns org's databases by name.
func (s *Service) List(ctx context.Context, org string) ([]View, error) {
	rows, err := s.store.List(ctx, org)
	if err != nil {
		return nil, fmt.Errorf("listing databases: %w", err)
	}
	views := make([]View, len(rows))
	for i := range rows {
		views[i] = view(&rows[i])
	}
	return views, nil
}

// dropPool closes this process's pool of a changed or deleted database;
// other processes' pools close when idle, and a changed URL opens a new
// pool at the next call anyway.
func (s *Service) dropPool(id uuid.UUID) { s.client.Drop(id) }

func parseID(id string) (uuid.UUID, error) {
	return orgsource.ParseID(id, database.SourcePrefix, "database")
}

// Kind returns the registered databases as a kind of source of the
// catalog.
func (s *Service) Kind() catalog.Kind { return kind{s} }

type kind struct{ s *Service }

func (kind) Prefix() string { return database.SourcePrefix }

func (kind) Bucket() string { return database.Bucket.Name }

// List returns org's databases, for the API (tenant pool).
func (k kind) List(ctx context.Context, org string) ([]*catalog.Source, error) {
	rows, err := k.s.store.List(ctx, org)
	if err != nil {
		return nil, fmt.Errorf("listing databases: %w", err)
	}
	out := make([]*catalog.Source, len(rows))
	for i := range rows {
		out[i] = k.s.source(&rows[i])
	}
	return out, nil
}

// Source resolves a database of org, for the workers and the invoke path
// (owner pool).
func (k kind) Source(ctx context.Context, org, id string) (*catalog.Source, error) {
	uid, ok := database.ParseSourceID(id)
	if !ok {
		return nil, errs.Errorf(errs.NotFound, "source not found: %s", id)
	}
	row, ok, err := k.s.store.Lookup(ctx, org, uid)
	if err != nil {
		return nil, fmt.Errorf("loading database: %w", err)
	}
	if !ok {
		return nil, errs.Errorf(errs.NotFound, "source not found: %s", id)
	}
	return k.s.source(&row), nil
}

// source wraps a database row as a source. Its URL is its credential,
// which the worker resolves before each call like a provider's token.
func (s *Service) source(row *databasestore.Row) *catalog.Source {
	src := s.client.Source(database.Database{
		ID: row.ID, Name: row.Name, MaxRows: int(row.MaxRows),
		StatementTimeout: time.Duration(row.StatementTimeoutMs) * time.Millisecond,
	})
	return &catalog.Source{Source: src, Name: row.Name, NeedsCredential: true, LocalCredential: true, Bucket: database.Bucket.Name, OrgRegistered: true}
}
