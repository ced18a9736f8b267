package api

import (
	"net/http"

	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/outbox"
)

func (s *Server) listDatabases(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	views, err := s.svc.ListDatabases(r.Context(), c.Org)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"databases": views})
	return nil
}

func (s *Server) createDatabase(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	var in outbox.DatabaseInput
	if err := decode(r, &in, false); err != nil {
		return err
	}
	view, err := s.svc.CreateDatabase(r.Context(), c.Org, c.Subject, &in)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]any{"database": view})
	return nil
}

func (s *Server) getDatabase(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	view, err := s.svc.GetDatabase(r.Context(), c.Org, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"database": view})
	return nil
}

func (s *Server) updateDatabase(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	var in outbox.DatabaseInput
	if err := decode(r, &in, false); err != nil {
		return err
	}
	view, err := s.svc.UpdateDatabase(r.Context(), c.Org, r.PathValue("id"), c.Subject, &in)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"database": view})
	return nil
}

func (s *Server) deleteDatabase(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	if err := s.svc.DeleteDatabase(r.Context(), c.Org, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
