package api

import (
	"context"
	"net/http"

	"github.com/outboxd/outboxd/executors/mcp"
	"github.com/outboxd/outboxd/executors/mcp/connectors"
	"github.com/outboxd/outboxd/internal/domain/auth"
)

// Connectors manages an organization's MCP connectors
// (executors/mcp/connectors).
type Connectors interface {
	List(ctx context.Context, org string) ([]connectors.View, error)
	Create(ctx context.Context, org, by string, in *connectors.Input) (connectors.View, error)
	Get(ctx context.Context, org, id string) (connectors.View, error)
	Update(ctx context.Context, org, id, by string, in *connectors.Input) (connectors.View, error)
	Delete(ctx context.Context, org, id string) error
	Validate(ctx context.Context, org, id string) (mcp.Diagnostics, error)
	Tools(ctx context.Context, org, id string) ([]connectors.ToolReview, error)
	Review(ctx context.Context, org, id string, modes map[string]string) ([]connectors.ToolReview, error)
}

func (s *Server) listConnectors(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	views, err := s.connectors.List(r.Context(), c.Org)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"connectors": views})
	return nil
}

func (s *Server) createConnector(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	var in connectors.Input
	if err := decode(r, &in, false); err != nil {
		return err
	}
	view, err := s.connectors.Create(r.Context(), c.Org, c.Subject, &in)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]any{"connector": view})
	return nil
}

func (s *Server) getConnector(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	view, err := s.connectors.Get(r.Context(), c.Org, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"connector": view})
	return nil
}

func (s *Server) updateConnector(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	var in connectors.Input
	if err := decode(r, &in, false); err != nil {
		return err
	}
	view, err := s.connectors.Update(r.Context(), c.Org, r.PathValue("id"), c.Subject, &in)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"connector": view})
	return nil
}

func (s *Server) deleteConnector(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	if err := s.connectors.Delete(r.Context(), c.Org, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) validateConnector(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	diag, err := s.connectors.Validate(r.Context(), c.Org, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, diag)
	return nil
}

func (s *Server) connectorTools(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	tools, err := s.connectors.Tools(r.Context(), c.Org, r.PathValue("id"))
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
	tools, err := s.connectors.Review(r.Context(), c.Org, r.PathValue("id"), modes)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"tools": tools})
	return nil
}
