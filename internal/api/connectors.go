package api

import (
	"net/http"

	"github.com/outboxd/outboxd/internal/domain/auth"
	"github.com/outboxd/outboxd/outbox"
)

func (s *Server) listConnectors(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	views, err := s.svc.ListConnectors(r.Context(), c.Org)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"connectors": views})
	return nil
}

func (s *Server) createConnector(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	var in outbox.ConnectorInput
	if err := decode(r, &in, false); err != nil {
		return err
	}
	view, err := s.svc.CreateConnector(r.Context(), c.Org, c.Subject, &in)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]any{"connector": view})
	return nil
}

func (s *Server) getConnector(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	view, err := s.svc.GetConnector(r.Context(), c.Org, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"connector": view})
	return nil
}

func (s *Server) updateConnector(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	var in outbox.ConnectorInput
	if err := decode(r, &in, false); err != nil {
		return err
	}
	view, err := s.svc.UpdateConnector(r.Context(), c.Org, r.PathValue("id"), c.Subject, &in)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"connector": view})
	return nil
}

func (s *Server) deleteConnector(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	if err := s.svc.DeleteConnector(r.Context(), c.Org, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) validateConnector(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	diag, err := s.svc.ValidateConnector(r.Context(), c.Org, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, diag)
	return nil
}

func (s *Server) connectorTools(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	tools, err := s.svc.ConnectorTools(r.Context(), c.Org, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"tools": tools})
	return nil
}

func (s *Server) reviewConnectorTools(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	var modes map[string]string
	if err := decode(r, &modes, false); err != nil {
		return err
	}
	if modes == nil {
		return badRequest("invalid_json", `body must be an object {"<tool>": "<mode>"}`)
	}
	tools, err := s.svc.ReviewConnectorTools(r.Context(), c.Org, r.PathValue("id"), modes)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"tools": tools})
	return nil
}
