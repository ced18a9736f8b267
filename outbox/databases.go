package outbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/outboxd/outboxd/executors/database"
	"github.com/outboxd/outboxd/internal/domain/credential"
	"github.com/outboxd/outboxd/internal/platform/dbsqlc"
	"github.com/outboxd/outboxd/internal/platform/dbutil"
)

// DatabaseInput creates or patches a registered database; nil fields are
// unchanged on patch. URL is write-only: stored sealed, never returned.
type DatabaseInput struct {
	Name *string `json:"name"`
	URL  *string `json:"url"`
	// StatementTimeout is a duration such as "10s".
	StatementTimeout *string `json:"statement_timeout"`
	MaxRows          *int    `json:"max_rows"`
}

// DatabaseView is a registered database as the API shows it: of its URL,
// only the host and the database name.
type DatabaseView struct {
	ID                 uuid.UUID `json:"id"`
	SourceID           string    `json:"source_id"`
	Name               string    `json:"name"`
	Host               string    `json:"host"`
	Database           string    `json:"database"`
	StatementTimeout   string    `json:"statement_timeout"`
	StatementTimeoutMs int32     `json:"statement_timeout_ms"`
	MaxRows            int32     `json:"max_rows"`
	CreatedBy          string    `json:"created_by"`
	CreatedAt          time.Time `json:"created_at"`
	UpdatedAt          time.Time `json:"updated_at"`
}

func viewDatabase(row dbsqlc.OrgDatabase) DatabaseView {
	return DatabaseView{
		ID: row.ID, SourceID: database.SourceID(row.ID), Name: row.Name, Host: row.Host, Database: row.Database,
		StatementTimeout:   (time.Duration(row.StatementTimeoutMs) * time.Millisecond).String(),
		StatementTimeoutMs: row.StatementTimeoutMs, MaxRows: row.MaxRows,
		CreatedBy: row.CreatedBy, CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt,
	}
}

// databaseFields are a database's stored fields, checked.
type databaseFields struct {
	name, host, db string
	timeoutMs      int32
	maxRows        int32
}

// apply checks in's fields and applies them to f. A URL is checked (its
// host and database become f's) but returned only to be sealed.
func (s *Service) applyDatabase(f *databaseFields, in *DatabaseInput) error {
	if in.Name != nil {
		f.name = strings.TrimSpace(*in.Name)
	}
	if f.name == "" || len(f.name) > 100 {
		return invalid("name", "name is required (at most 100 characters)")
	}
	if in.URL != nil {
		if len(strings.TrimSpace(*in.URL)) > maxURLBytes {
			return invalid("url", "url is longer than %d bytes", maxURLBytes)
		}
		dbs := s.deps.Sources.Databases()
		if dbs == nil {
			return fmt.Errorf("%w: databases are not configured", ErrNotFound)
		}
		target, err := database.CheckURL(strings.TrimSpace(*in.URL), dbs.AllowPrivateNetworks())
		if err != nil {
			return invalid("url", "%s", err.Error())
		}
		f.host, f.db = target.Host, target.Database
	}
	if in.StatementTimeout != nil {
		d, err := time.ParseDuration(strings.TrimSpace(*in.StatementTimeout))
		if err != nil || d < database.MinStatementTimeout || d > database.MaxStatementTimeout {
			return invalid("statement_timeout", "statement_timeout must be a duration from %s to %s, such as \"10s\"",
				database.MinStatementTimeout, database.MaxStatementTimeout)
		}
		f.timeoutMs = int32(d.Milliseconds())
	}
	if in.MaxRows != nil {
		if *in.MaxRows < 1 || *in.MaxRows > database.MaxMaxRows {
			return invalid("max_rows", "max_rows must be from 1 to %d", database.MaxMaxRows)
		}
		f.maxRows = int32(*in.MaxRows)
	}
	return nil
}

// CreateDatabase registers a database for org, with its URL sealed in the
// credential store in the same transaction.
func (s *Service) CreateDatabase(ctx context.Context, org, by string, in *DatabaseInput) (DatabaseView, error) {
	if in.URL == nil || strings.TrimSpace(*in.URL) == "" {
		return DatabaseView{}, invalid("url", "url is required: postgres://user:password@host:5432/database")
	}
	f := databaseFields{timeoutMs: int32(database.DefaultStatementTimeout.Milliseconds()), maxRows: database.DefaultMaxRows}
	if err := s.applyDatabase(&f, in); err != nil {
		return DatabaseView{}, err
	}
	row, err := dbutil.WithTxV(ctx, s.deps.Pool, func(ctx context.Context, tx pgx.Tx) (dbsqlc.OrgDatabase, error) {
		row, err := s.queries.DatabaseInsert(ctx, tx, dbsqlc.DatabaseInsertParams{
			OrganizationID: org, Name: f.name, Host: f.host, Database: f.db,
			StatementTimeoutMs: f.timeoutMs, MaxRows: f.maxRows, CreatedBy: by,
		})
		if err != nil {
			return row, err
		}
		_, err = s.deps.Credentials.PutTx(ctx, tx, credential.Request{Org: org, Integration: database.SourceID(row.ID)},
			credential.Token{Value: strings.TrimSpace(*in.URL)}, by)
		return row, err
	})
	if isUniqueViolation(err) {
		return DatabaseView{}, fmt.Errorf("%w: a database named %q exists", ErrConflict, f.name)
	}
	if err != nil {
		return DatabaseView{}, fmt.Errorf("creating database: %w", err)
	}
	return viewDatabase(row), nil
}

// UpdateDatabase patches a database; a new URL replaces the sealed one.
func (s *Service) UpdateDatabase(ctx context.Context, org, id, by string, in *DatabaseInput) (DatabaseView, error) {
	uid, err := parseDatabaseID(id)
	if err != nil {
		return DatabaseView{}, err
	}
	if in.URL != nil && strings.TrimSpace(*in.URL) == "" {
		return DatabaseView{}, invalid("url", "url must not be empty")
	}
	row, err := dbutil.WithTxV(ctx, s.deps.Pool, func(ctx context.Context, tx pgx.Tx) (dbsqlc.OrgDatabase, error) {
		cur, err := s.queries.DatabaseGetForUpdate(ctx, tx, dbsqlc.DatabaseGetForUpdateParams{ID: uid, OrganizationID: org})
		if errors.Is(err, pgx.ErrNoRows) {
			return cur, fmt.Errorf("%w: database %s", ErrNotFound, id)
		}
		if err != nil {
			return cur, err
		}
		f := databaseFields{name: cur.Name, host: cur.Host, db: cur.Database, timeoutMs: cur.StatementTimeoutMs, maxRows: cur.MaxRows}
		if err := s.applyDatabase(&f, in); err != nil {
			return cur, err
		}
		if in.URL != nil {
			_, err := s.deps.Credentials.PutTx(ctx, tx, credential.Request{Org: org, Integration: database.SourceID(uid)},
				credential.Token{Value: strings.TrimSpace(*in.URL)}, by)
			if err != nil {
				return cur, err
			}
		}
		return s.queries.DatabaseUpdate(ctx, tx, dbsqlc.DatabaseUpdateParams{
			ID: uid, OrganizationID: org, Name: f.name, Host: f.host, Database: f.db,
			StatementTimeoutMs: f.timeoutMs, MaxRows: f.maxRows,
		})
	})
	if isUniqueViolation(err) {
		return DatabaseView{}, fmt.Errorf("%w: another database has that name", ErrConflict)
	}
	if err != nil {
		return DatabaseView{}, err
	}
	s.dropDatabasePool(uid)
	return viewDatabase(row), nil
}

// DeleteDatabase removes a database and its sealed URL. Invocations of it
// not yet run fail with unknown_source.
func (s *Service) DeleteDatabase(ctx context.Context, org, id string) error {
	uid, err := parseDatabaseID(id)
	if err != nil {
		return err
	}
	err = dbutil.WithTx(ctx, s.deps.Pool, func(ctx context.Context, tx pgx.Tx) error {
		n, err := s.queries.DatabaseDelete(ctx, tx, dbsqlc.DatabaseDeleteParams{ID: uid, OrganizationID: org})
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("%w: database %s", ErrNotFound, id)
		}
		return s.queries.CredentialDelete(ctx, tx, dbsqlc.CredentialDeleteParams{OrganizationID: org, Integration: database.SourceID(uid)})
	})
	if err == nil {
		s.dropDatabasePool(uid)
	}
	return err
}

// GetDatabase returns one database of org.
func (s *Service) GetDatabase(ctx context.Context, org, id string) (DatabaseView, error) {
	uid, err := parseDatabaseID(id)
	if err != nil {
		return DatabaseView{}, err
	}
	row, err := s.queries.DatabaseGet(ctx, s.deps.Pool, dbsqlc.DatabaseGetParams{ID: uid, OrganizationID: org})
	if errors.Is(err, pgx.ErrNoRows) {
		return DatabaseView{}, fmt.Errorf("%w: database %s", ErrNotFound, id)
	}
	if err != nil {
		return DatabaseView{}, err
	}
	return viewDatabase(row), nil
}

// ListDatabases returns org's databases by name.
func (s *Service) ListDatabases(ctx context.Context, org string) ([]DatabaseView, error) {
	rows, err := s.queries.DatabaseList(ctx, s.deps.Pool, org)
	if err != nil {
		return nil, fmt.Errorf("listing databases: %w", err)
	}
	views := make([]DatabaseView, len(rows))
	for i, r := range rows {
		views[i] = viewDatabase(r)
	}
	return views, nil
}

// dropDatabasePool closes this process's pool of a changed or deleted
// database; other processes' pools close when idle, and a changed URL
// opens a new pool at the next call anyway.
func (s *Service) dropDatabasePool(id uuid.UUID) {
	if dbs := s.deps.Sources.Databases(); dbs != nil {
		dbs.Drop(id)
	}
}

func parseDatabaseID(id string) (uuid.UUID, error) {
	uid, err := uuid.Parse(strings.TrimPrefix(id, database.SourcePrefix))
	if err != nil {
		return uuid.Nil, fmt.Errorf("%w: database %s", ErrNotFound, id)
	}
	return uid, nil
}
