package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/outboxd/outboxd/executors"
	"github.com/outboxd/outboxd/executors/database"
	"github.com/outboxd/outboxd/executors/database/databases"
	"github.com/outboxd/outboxd/internal/domain/audit"
	"github.com/outboxd/outboxd/internal/domain/auth"
)

// Databases manages the databases an organization registers
// (executors/database/databases).
type Databases interface {
	List(ctx context.Context, org string) ([]databases.View, error)
	Create(ctx context.Context, org, by string, in *databases.Input) (databases.View, error)
	Get(ctx context.Context, org, id string) (databases.View, error)
	Update(ctx context.Context, org, id, by string, in *databases.Input) (databases.View, []uuid.UUID, error)
	Delete(ctx context.Context, org, id string) error
	Test(ctx context.Context, org, id string) (databases.TestResult, error)
}

// databaseView is the API shape of a registered database: of its URL, only
// the host and the database name. It converts from databases.View, so the
// two keep the same fields.
type databaseView struct {
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

func viewDatabase(v databases.View) databaseView { return databaseView(v) }

// decodeDatabaseInput decodes a database's create or patch body. Its type
// is named Input, local to keep it apart from the connectors' Input:
// encoding/json names it in its errors ("Go struct field Input.max_rows of
// type int").
func decodeDatabaseInput(r *http.Request) (*databases.Input, error) {
	type Input struct {
		Name             *string `json:"name"`
		URL              *string `json:"url"`
		StatementTimeout *string `json:"statement_timeout"`
		MaxRows          *int    `json:"max_rows"`
	}
	var in Input
	if err := decode(r, &in, false); err != nil {
		return nil, err
	}
	return (*databases.Input)(&in), nil
}

func (s *Server) listDatabases(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	list, err := s.databases.List(r.Context(), c.Org)
	if err != nil {
		return err
	}
	list = inClaim(c, list, databaseSource)
	writeJSON(w, http.StatusOK, map[string]any{"databases": viewEach(list, viewDatabase)})
	return nil
}

func (s *Server) createDatabase(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	if err := unnarrowed(c, "a new database is a source outside the token's sources claim"); err != nil {
		return err
	}
	in, err := decodeDatabaseInput(r)
	if err != nil {
		return err
	}
	db, err := s.databases.Create(r.Context(), c.Org, c.Subject, in)
	if err != nil {
		return databaseError(err)
	}
	s.record(r, &audit.Change{Action: "database.create", TargetType: "database", TargetID: db.ID.String(), After: databaseChange(db, in)})
	writeJSON(w, http.StatusCreated, map[string]any{"database": viewDatabase(db)})
	return nil
}

func (s *Server) getDatabase(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	db, err := s.databases.Get(r.Context(), c.Org, r.PathValue("id"))
	if err != nil {
		return err
	}
	if err := sourceAllowed(c, db.SourceID); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"database": viewDatabase(db)})
	return nil
}

func (s *Server) updateDatabase(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	in, err := decodeDatabaseInput(r)
	if err != nil {
		return err
	}
	before, err := s.databaseBefore(r, c)
	if err != nil {
		return err
	}
	db, revoked, err := s.databases.Update(r.Context(), c.Org, r.PathValue("id"), c.Subject, in)
	if err != nil {
		return databaseError(err)
	}
	s.record(r, &audit.Change{Action: "database.update", TargetType: "database", TargetID: db.ID.String(), Before: before, After: databaseChange(db, in)})
	s.recordRevokedGrants(r, revoked, db.SourceID)
	writeJSON(w, http.StatusOK, map[string]any{"database": viewDatabase(db)})
	return nil
}

func (s *Server) deleteDatabase(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	before, err := s.databaseBefore(r, c)
	if err != nil {
		return err
	}
	if err := s.databases.Delete(r.Context(), c.Org, r.PathValue("id")); err != nil {
		return err
	}
	target := r.PathValue("id")
	if before != nil { // its id, also when the path gave its source id
		target = before.ID.String()
	}
	s.record(r, &audit.Change{Action: "database.delete", TargetType: "database", TargetID: target, Before: before})
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// databaseError answers a URL whose role is privileged with 400
// privileged_role, naming the url field as a validation error does.
func databaseError(err error) error {
	var privileged *database.PrivilegedRoleError
	if errors.As(err, &privileged) {
		return &apiError{status: http.StatusBadRequest, code: database.CodePrivilegedRole, message: privileged.Error(),
			details: map[string]any{"fields": []executors.FieldError{{Field: "url", Message: privileged.Error()}}}}
	}
	return err
}

// databaseInClaim is nil when c's sources claim allows the path's
// database (or c carries none), else its 403 source_not_allowed; an
// unknown database is not found.
func (s *Server) databaseInClaim(r *http.Request, c *auth.Claims) error {
	_, err := pathRecord(r, c, false, s.databases.Get, databaseSource)
	return err
}

// databaseBefore is the database of the path before a change, for the
// audit trail (nil when nothing is recorded), once c's sources claim is
// checked as databaseInClaim does, on the same read.
func (s *Server) databaseBefore(r *http.Request, c *auth.Claims) (*databaseView, error) {
	db, err := pathRecord(r, c, s.audit != nil, s.databases.Get, databaseSource)
	if err != nil || s.audit == nil {
		return nil, err
	}
	v := viewDatabase(*db)
	return &v, nil
}

func databaseSource(v databases.View) string { return v.SourceID }

// databaseChange is a database after a change, for the audit trail: its
// view, and whether the change set its URL, which holds its password
// (never the URL itself).
func databaseChange(db databases.View, in *databases.Input) any {
	return struct {
		databaseView
		URLChanged bool `json:"url_changed"`
	}{viewDatabase(db), in.URL != nil}
}

// databaseTestView is what testing a database found; never its URL.
type databaseTestView struct {
	Reachable  bool   `json:"reachable"`
	TableCount int    `json:"table_count"`
	Code       string `json:"code,omitempty"`
	Error      string `json:"error,omitempty"`
}

func (s *Server) testDatabase(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	if err := s.databaseInClaim(r, c); err != nil {
		return err
	}
	res, err := s.databases.Test(r.Context(), c.Org, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, databaseTestView(res))
	return nil
}
