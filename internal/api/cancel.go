package api

import (
	"net/http"

	"github.com/outboxd/outboxd/internal/domain/auth"
)

// cancelInSession is an agent's undo of an invocation of its own session
// that has not started: pending (a human has not decided) or approved but
// not yet executing. It is cancelled and its job descheduled, as DELETE
// /v1/envelopes/{id} does for a service token. An invocation of another
// session or organization, or of a source the token's sources claim does
// not allow, is not found; one that has started or ended is a conflict,
// and is left as it is.
func (s *Server) cancelInSession(w http.ResponseWriter, r *http.Request, c *auth.Claims) error {
	// authorize has checked that the path's session is the token's.
	if _, err := s.svc.GetInSession(r.Context(), c.Org, r.PathValue("session_id"), r.PathValue("id"), c.Sources); err != nil {
		return err
	}
	inv, err := s.svc.Cancel(r.Context(), c.Org, r.PathValue("id"), c.Subject)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"invocation": viewInvocation(inv)})
	return nil
}
