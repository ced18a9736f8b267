package api

import (
	"context"
	"net/http"

	"github.com/outboxd/outboxd/executors/database/databases"
	"github.com/outboxd/outboxd/internal/domain/auth"
)

// Databases manages the databases an organization registers
// (executors/database/databases).
type Databases interface {
	List(ctx context.Context, org string) ([]databases.View, error)
	Create(ctx context.Context, org, by string, in *databases.Input) (databases.View, error)
	Get(ctx context.Context, org, id string) (databases.View, error)
	Update(ctx context.Context, org, id, by string, in *databases.Input) (databases.View, error)
	Delete(ctx context.Context, org, id string) error
}

func (s *Server) listDatabases(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	views, err := s.databases.List(r.Context(), c.Org)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"databases": views})
	return nil
}

func (s *Server) createDatabase(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	var in databases.Input
	if err := decode(r, &in, false); err != nil {
		return err
	}
	view, err := s.databases.Create(r.Context(), c.Org, c.Subject, &in)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]any{"database": view})
	return nil
}

func (s *Server) getDatabase(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	view, err := s.databases.Get(r.Context(), c.Org, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"database": view})
	return nil
}

func (s *Server) updateDatabase(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	var in databases.Input
	if err := decode(r, &in, false); err != nil {
		return err
	}
	view, err := s.databases.Update(r.Context(), c.Org, r.PathValue("id"), c.Subject, &in)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"database": view})
	return nil
}

func (s *Server) deleteDatabase(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	if err := s.databases.Delete(r.Context(), c.Org, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
